package translate

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scanValid is json.Valid by Scan.
func scanValid(data []byte) bool {
	end, err := Scan(data, skipSpace(data, 0))
	return err == nil && skipSpace(data, end) == len(data)
}

// TestScanAcceptsWhatEncodingJSONAccepts compares Scan with json.Valid on hand-picked documents, the
// fuzz corpora of the repository, and random mutations of a document.
func TestScanAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	for _, d := range scanCorpus() {
		if got, want := scanValid([]byte(d)), json.Valid([]byte(d)); got != want {
			t.Errorf("Scan accepts %q: %v, json.Valid: %v", d, got, want)
		}
	}
}

// scanCorpus is hand-picked documents, the fuzz corpora of the repository, and random mutations and
// truncations of a document.
func scanCorpus() []string {
	docs := []string{
		``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `-`, `01`, `1.`, `1.5`, `1e`, `1e+`, `1E-5`, `-1.5e10`, `1 2`, `true`, `tru`, `nul`, `null `,
		`{"a":1,}`, `[1,]`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `"\u00e9"`, `"\u00g9"`, `"\x"`, `"a` + "\t" + `"`, `"\/\b\f\n\r\t\"\\"`,
		"\xff", `"` + "\xff\xfe" + `"`, ` {"a" : [ 1 , 2 ] } `, `{"a":[{"b":null,"c":[true,false]}],"d":"e"}`, `[-]`, `[+1]`, `[.5]`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"a":` + strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat("}", 10001),
		`{"a":` + strings.Repeat(`{"a":`, 9998) + `1` + strings.Repeat("}", 9999),
	}
	files, _ := filepath.Glob("../proxy/*/testdata/fuzz/*/*")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			docs = append(docs, string(data))
		}
	}
	base := []byte(`{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"K","items":[{"a":-1.5e3,"b":"x\"y\u0041","c":[true,false,null,{}],` +
		`"g":"cluster.x-k8s.io","r":{"apiGroup":"infrastructure.cluster.x-k8s.io"}}],"z":{"g":"cluster.x-k8s.io"}}`)
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte(`{}[]":,.-+eE0123456789tfnrul\ ` + "\n\t")
	for range 20000 {
		d := append([]byte(nil), base...)
		for range 1 + rng.Intn(3) {
			d[rng.Intn(len(d))] = alphabet[rng.Intn(len(alphabet))]
		}
		docs = append(docs, string(d[:rng.Intn(len(d)+1)]))
	}
	return docs
}

func TestScanIncomplete(t *testing.T) {
	for _, d := range []string{`{`, `{"a"`, `{"a":`, `{"a":1`, `[1,`, `"ab`, `"a\`, `"\u00`, `tr`, `-`, `1.`, `1e`} {
		if _, err := Scan([]byte(d), 0); !errors.Is(err, ErrIncomplete) {
			t.Errorf("Scan(%q): %v, want ErrIncomplete", d, err)
		}
	}
}
