// Package wsframe reads and writes websocket frames (RFC 6455 section 5.2) as a server sends them:
// unmasked, with no extension negotiated. The proxy reads the frames of its backend's websocket watches
// with Read and writes the frames it sends the client in their place with Write (package
// internal/watchcopy, websocket.go); it never reads a client's frames, which it passes on as they are.
package wsframe

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The websocket opcodes (RFC 6455 section 5.2).
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// CloseNormal is the payload of a close frame with status 1000 (normal closure) and no reason, as
// x/net/websocket's Conn.Close sends it.
var CloseNormal = []byte{0x03, 0xE8}

// Error is a frame that breaks RFC 6455 or that the reader cannot take, as opposed to a connection that
// failed. Its text names the backend, the only server whose frames the proxy reads.
type Error struct{ msg string }

func (e *Error) Error() string { return "websocket frame from the backend: " + e.msg }

// Read reads one frame a server sends (RFC 6455 section 5.2: unmasked, no extension negotiated, so no
// reserved bit set) and returns its FIN bit, opcode and payload. A control frame must be whole and at
// most 125 bytes long, any frame at most maxPayload bytes. A frame that breaks these rules is an *Error;
// a connection that ends before a frame is io.EOF, one that ends within a frame io.ErrUnexpectedEOF, and
// any other error is r's.
func Read(r *bufio.Reader, maxPayload uint64) (fin bool, op byte, payload []byte, err error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = head[0]&0x80 != 0, head[0]&0x0F
	if head[0]&0x70 != 0 {
		return false, 0, nil, &Error{"reserved bits set"}
	}
	if head[1]&0x80 != 0 {
		return false, 0, nil, &Error{"masked"}
	}
	n := uint64(head[1] & 0x7F)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return false, 0, nil, noEOF(err)
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return false, 0, nil, noEOF(err)
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if op >= OpClose && (!fin || n > 125) {
		return false, 0, nil, &Error{"a fragmented or long control frame"}
	}
	if n > maxPayload {
		return false, 0, nil, &Error{fmt.Sprintf("a frame of %d bytes, more than %d", n, maxPayload)}
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return false, 0, nil, noEOF(err)
	}
	return fin, op, payload, nil
}

// noEOF turns io.EOF in the middle of a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Write appends one whole (FIN set), unmasked frame of opcode op, as a server sends it (RFC 6455 section
// 5.2), to b.
func Write(b *bytes.Buffer, op byte, payload []byte) {
	b.WriteByte(0x80 | op)
	switch n := len(payload); {
	case n < 126:
		b.WriteByte(byte(n))
	case n <= 0xFFFF:
		b.WriteByte(126)
		b.Write(binary.BigEndian.AppendUint16(nil, uint16(n)))
	default:
		b.WriteByte(127)
		b.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
	}
	b.Write(payload)
}
