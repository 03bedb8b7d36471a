package wsframe_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/openshift/hypershift-capi-proxy/proxy/internal/wsframe"
)

// TestWriteRead: every frame Write writes, in each of the three length encodings, Read reads back whole.
func TestWriteRead(t *testing.T) {
	for _, n := range []int{0, 125, 126, 0xFFFF, 0x10000} {
		var b bytes.Buffer
		payload := bytes.Repeat([]byte{'x'}, n)
		wsframe.Write(&b, wsframe.OpText, payload)
		fin, op, got, err := wsframe.Read(bufio.NewReader(&b), 1<<20)
		if err != nil || !fin || op != wsframe.OpText || !bytes.Equal(got, payload) {
			t.Errorf("%d bytes: fin %v, op %#x, %d bytes, %v", n, fin, op, len(got), err)
		}
		if b.Len() != 0 {
			t.Errorf("%d bytes: %d bytes left unread", n, b.Len())
		}
	}
}

// TestReadRefuses: frames a server must not send, or larger than the bound, are an *Error; a connection
// that ends in a frame is io.ErrUnexpectedEOF, one that ends between frames io.EOF.
func TestReadRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		frame []byte
		want  error
	}{
		"reserved bit":     {[]byte{0x81 | 0x40, 1, 'x'}, nil},
		"masked":           {[]byte{0x81, 0x80 | 1, 1, 2, 3, 4, 'x'}, nil},
		"fragmented close": {[]byte{0x08, 0}, nil},
		"long ping":        {append([]byte{0x89, 126, 0, 126}, make([]byte, 126)...), nil},
		"over the bound":   {append([]byte{0x81, 126, 0, 200}, make([]byte, 200)...), nil},
		"no frame":         {nil, io.EOF},
		"cut length":       {[]byte{0x81, 126, 0}, io.ErrUnexpectedEOF},
		"cut payload":      {[]byte{0x81, 3, 'x'}, io.ErrUnexpectedEOF},
	} {
		_, _, _, err := wsframe.Read(bufio.NewReader(bytes.NewReader(tc.frame)), 100)
		var frameErr *wsframe.Error
		switch {
		case tc.want == nil && !errors.As(err, &frameErr):
			t.Errorf("%s: %v, want a *wsframe.Error", name, err)
		case tc.want != nil && !errors.Is(err, tc.want):
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}
