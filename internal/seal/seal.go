package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the size of a Key in bytes (AES-256).
const KeySize = 32

// Key is a sealing key.
type Key struct {
	aead cipher.AEAD
}

// ErrOpen is what Open says of a value that is not sealed with its key
// and additional data (or was changed).
var ErrOpen = errors.New("seal: the value does not open with this key (another key, another record, or changed)")

// NewKey makes a Key of b, which must be KeySize bytes.
func NewKey(b []byte) (*Key, error) {
	if len(b) != KeySize {
		return nil, fmt.Errorf("seal: a key is %d bytes, got %d", KeySize, len(b))
	}
	block, err := aes.NewCipher(b)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Key{aead: aead}, nil
}

// RandomKey makes a new random Key, and returns its bytes too.
func RandomKey() (*Key, []byte, error) {
	b := make([]byte, KeySize)
	if _, err := rand.Read(b); err != nil {
		return nil, nil, fmt.Errorf("seal: %w", err)
	}
	k, err := NewKey(b)
	return k, b, err
}

// ParseKey reads a key file's text: 64 hex digits, spaces around them
// allowed.
func ParseKey(text string) (*Key, error) {
	s := strings.TrimSpace(text)
	if len(s) != 2*KeySize {
		return nil, fmt.Errorf("seal: a key file holds %d hex digits, this one %d characters", 2*KeySize, len(s))
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("seal: a key file holds hex digits only (0-9, a-f)")
	}
	return NewKey(b)
}

// Seal encrypts plain for keeping under the name aad (the record's key)
// and returns nonce and ciphertext.
func (k *Key) Seal(plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return k.aead.Seal(nonce, nonce, plain, aad), nil
}

// Open decrypts what Seal returned for the name aad; ErrOpen when it was
// sealed with another key or name, or changed since.
func (k *Key) Open(sealed, aad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, fmt.Errorf("seal: a sealed value is at least %d bytes, this one %d", n+k.aead.Overhead(), len(sealed))
	}
	plain, err := k.aead.Open(nil, sealed[:n], sealed[n:], aad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// LoadOrCreate reads the key file path, or makes one (mode 0600, in an
// existing directory) when there is none, and says whether it made it. A
// key file that others than its owner may read or write is refused.
func LoadOrCreate(path string) (*Key, bool, error) {
	info, err := os.Stat(path)
	switch {
	case err == nil:
		if info.Mode().Perm()&0o077 != 0 {
			return nil, false, fmt.Errorf("key file %s: mode %v lets others read it: chmod 600 %s", path, info.Mode().Perm(), path)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, false, fmt.Errorf("key file %s: %w", path, err)
		}
		k, err := ParseKey(string(text))
		if err != nil {
			return nil, false, fmt.Errorf("key file %s: %w", path, err)
		}
		return k, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, false, fmt.Errorf("key file %s: %w", path, err)
	}
	k, b, err := RandomKey()
	if err != nil {
		return nil, false, err
	}
	if err := create(path, []byte(hex.EncodeToString(b)+"\n")); err != nil {
		return nil, false, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, true, nil
}

// create writes data to a new file path, mode 0600, synced with its
// directory; an existing file is not replaced.
func create(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
