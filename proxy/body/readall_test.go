package body

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestReadAll: whatever length a body declares, ReadAll returns what io.ReadAll returns, and a body of
// the declared length is read in one allocation.
func TestReadAll(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 700)
	for _, tc := range []struct {
		name string
		size int64
		r    func() io.Reader
		want []byte
	}{
		{"declared", int64(len(data)), func() io.Reader { return bytes.NewReader(data) }, data},
		{"unknown", -1, func() io.Reader { return bytes.NewReader(data) }, data},
		{"zero", 0, func() io.Reader { return bytes.NewReader(data) }, data},
		{"declared shorter than the body", 10, func() io.Reader { return bytes.NewReader(data) }, data},
		{"declared longer than the body", 1 << 20, func() io.Reader { return bytes.NewReader(data) }, data},
		{"beyond the presize bound", 1 << 40, func() io.Reader { return strings.NewReader("{}") }, []byte("{}")},
		{"one byte a read", int64(len(data)), func() io.Reader { return iotest.OneByteReader(bytes.NewReader(data)) }, data},
		{"empty", 0, func() io.Reader { return strings.NewReader("") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadAll(tc.r(), tc.size)
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("ReadAll = %d bytes, %v; want %d bytes", len(got), err, len(tc.want))
			}
		})
	}
	failing := errors.New("broken off")
	if _, err := ReadAll(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(failing)), int64(len(data))); !errors.Is(err, failing) {
		t.Fatalf("ReadAll of a failing reader: %v, want %v", err, failing)
	}
	if allocs := testing.AllocsPerRun(20, func() {
		if _, err := ReadAll(bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}); allocs > 2 { // the buffer, and bytes.Buffer itself where it escapes
		t.Errorf("ReadAll of a body of its declared length: %.0f allocations, want at most 2", allocs)
	}
}

// TestReadRequestLimit: a body over the limit is a 413 whatever length it declares, and one within it
// is read whole.
func TestReadRequestLimit(t *testing.T) {
	for _, tc := range []struct {
		name          string
		body          string
		contentLength int64
		limit         int64
		want          int // 0: read whole
	}{
		{"within", "0123456789", 10, 10, 0},
		{"within, length unknown", "0123456789", -1, 10, 0},
		{"over", "0123456789", 10, 9, http.StatusRequestEntityTooLarge},
		{"over, declared within", "0123456789", 5, 9, http.StatusRequestEntityTooLarge},
		{"over, length unknown", "0123456789", -1, 9, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
			r.ContentLength = tc.contentLength
			got, err := ReadRequest(r, tc.limit)
			if tc.want == 0 {
				if err != nil || string(got) != tc.body {
					t.Fatalf("ReadRequest = %q, %v; want %q", got, err, tc.body)
				}
				return
			}
			if apiCode(err) != tc.want {
				t.Fatalf("ReadRequest: %v, want a %d", err, tc.want)
			}
		})
	}
}

func apiCode(err error) int {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		return int(s.Status().Code)
	}
	return 0
}
