package apiserver_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/switchboard-dev/switchboard/apiserver"
	"github.com/switchboard-dev/switchboard/internal/plans"
	"github.com/switchboard-dev/switchboard/test/support/apitest"
)

// A recording that takes longer to download than the server's write timeout still arrives
// whole: the audio route moves the write deadline with each chunk.
func TestSlowRecordingDownloadOutlastsWriteTimeout(t *testing.T) {
	h := newRecordingHarness(t, time.Now())
	tenant := apitest.NewTenant(t, h.store, plans.Business)
	audio := testAudio(8 << 20)
	rec := h.addRecording(t, tenant.Account.ID, audio, 600)
	path := h.linkPath(t, tenant.OwnerKey, rec.PublicID)

	const writeTimeout = time.Second
	srv := httptest.NewUnstartedServer(apiserver.New(apiserver.Config{BaseURL: h.api.BaseURL, Clock: h.clock, Log: logr.Discard(),
		Media: apiserver.MediaConfig{SigningKey: recordingTestKey, Recordings: h.audio}}, h.store))
	srv.Config.WriteTimeout = writeTimeout
	srv.Start()
	t.Cleanup(srv.Close)
	// A small receive buffer, so the server cannot hand the whole file to the kernel at once.
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			_ = conn.(*net.TCPConn).SetReadBuffer(32 << 10)
		}
		return conn, err
	}}}
	start := time.Now()
	resp, err := client.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	buf := make([]byte, 256<<10)
	for {
		n, err := io.ReadFull(resp.Body, buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // about 2.5 MB/s
	}
	took := time.Since(start)
	t.Logf("downloaded %d of %d bytes in %v (server write timeout %v)", got.Len(), len(audio), took.Round(time.Millisecond), writeTimeout)
	if took < 2*writeTimeout {
		t.Fatalf("the download took %v; the test needs it slower than the write timeout", took)
	}
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got.Bytes(), audio) {
		t.Errorf("got %d and %d bytes, want 200 and all %d", resp.StatusCode, got.Len(), len(audio))
	}
}
