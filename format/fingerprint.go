package format

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
)

// Fingerprinter computes a train block's Fingerprint as its values
// arrive: Write them in order, then Sum. It hashes them 8 KiB at a time
// (Fingerprint hands SHA-256 8 bytes per call: 0.8 against 0.5 CPU-s for
// an N = 10^4 block).
type Fingerprinter struct {
	h   hash.Hash
	buf [8 << 10]byte
}

// NewFingerprinter returns a Fingerprinter with nothing written.
func NewFingerprinter() *Fingerprinter { return &Fingerprinter{h: sha256.New()} }

// Write adds values to the block, little-endian as Fingerprint reads them.
func (f *Fingerprinter) Write(values []float64) {
	for len(values) > 0 {
		k := min(len(values), len(f.buf)/8)
		for i, v := range values[:k] {
			binary.LittleEndian.PutUint64(f.buf[8*i:], math.Float64bits(v))
		}
		f.h.Write(f.buf[:8*k])
		values = values[k:]
	}
}

// Sum returns the fingerprint of the values written: Fingerprint's of
// them all.
func (f *Fingerprinter) Sum() string { return hex.EncodeToString(f.h.Sum(nil)[:16]) }
