package apiserver

import (
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// audioChunkWriteTimeout is how long a client may take to accept each chunk of recording
// audio. The server's write timeout (serve --http-write-timeout) bounds a whole response,
// which a long recording on a slow link can outlast; the audio route extends the deadline
// chunk by chunk instead, so a client that stops reading is still cut off.
const audioChunkWriteTimeout = 30 * time.Second

// deadlineExtendingWriter moves the connection's write deadline audioChunkWriteTimeout ahead
// of each write. It has no ReadFrom, so copies reach it in small chunks (32 KiB).
type deadlineExtendingWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	// wall is real time: socket deadlines are, whatever clock the API's logic runs on.
	wall clock.PassiveClock
}

func newDeadlineExtendingWriter(w http.ResponseWriter, underlying http.ResponseWriter) deadlineExtendingWriter {
	return deadlineExtendingWriter{ResponseWriter: w, rc: http.NewResponseController(underlying), wall: clock.RealClock{}}
}

func (w deadlineExtendingWriter) Write(p []byte) (int, error) {
	// Unsupported (a writer that cannot set deadlines) leaves the server's own timeout.
	_ = w.rc.SetWriteDeadline(w.wall.Now().Add(audioChunkWriteTimeout))
	return w.ResponseWriter.Write(p)
}
