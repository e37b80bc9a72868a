package listen

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/switchboard-dev/switchboard/internal/webhook/send"
)

// saltFileName holds this machine's random salt, in the user's config directory.
const saltFileName = "listen-salt"

// DefaultConfigDir is where the salt lives: os.UserConfigDir()/switchboard.
func DefaultConfigDir() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "switchboard"), nil
}

// LocalSecret is the signing secret listen forwards with: whsec_ and the base64 of
// HMAC-SHA256(machine salt, API key), so it stays the same for a key on one machine (a
// receiver configured with it survives restarts), differs between keys and machines, and
// tells nothing about the key. The salt file is made on first use.
func LocalSecret(configDir, apiKey string) (string, error) {
	salt, err := machineSalt(configDir)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, salt)
	m.Write([]byte("switchboard listen signing secret\n"))
	m.Write([]byte(apiKey))
	return send.SecretPrefix + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// machineSalt reads the salt file, or makes it: written to a temporary file and linked into
// place, so two listens starting at once agree on one salt.
func machineSalt(dir string) ([]byte, error) {
	path := filepath.Join(dir, saltFileName)
	if salt, err := readSalt(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return salt, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make the config directory: %w", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, saltFileName+".*")
	if err != nil {
		return nil, fmt.Errorf("write the salt file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(base64.StdEncoding.EncodeToString(b) + "\n")
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("write the salt file: %w", werr)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("write the salt file: %w", err)
	}
	return readSalt(path)
}

func readSalt(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	salt, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(salt) < 16 {
		return nil, fmt.Errorf("the salt file %s is damaged: remove it to make a new one (receivers then need the new secret)", path)
	}
	return salt, nil
}
