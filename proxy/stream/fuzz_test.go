package stream_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/openshift/hypershift-capi-proxy/proxy/body"
	"github.com/openshift/hypershift-capi-proxy/proxy/stream"
	"github.com/openshift/hypershift-capi-proxy/translate"
	"github.com/openshift/hypershift-capi-proxy/zz_generated/routes"
)

// objects translates with the generated route table, as the proxy does.
var objects = func() stream.Objects {
	t := body.New(translate.NewTable(routes.Routes))
	return stream.Objects{APIVersion: translate.ToUpstream.APIVersion, Object: t.Upstream, Status: t.Upstream}
}()

// appendObjects translates list items as the proxy's lists do: appended to one buffer, in one pass when
// apiVersion and kind lead.
var appendObjects = func() stream.Objects {
	o := objects
	o.AppendObject = body.New(translate.NewTable(routes.Routes)).AppendUpstreamOfValid(schema.GroupResource{Group: "cluster.hypershift.openshift.io", Resource: "machines"})
	return o
}()

const machine = `{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"name":"m","namespace":"ns",` +
	`"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineSet","name":"ms","uid":"u"}]},` +
	`"spec":{"clusterName":"c","infrastructureRef":{"apiGroup":"infrastructure.cluster.hypershift.openshift.io","kind":"AWSMachine","name":"a"}}}`

// fusedObjects translates list items as the proxy's lists do: validated and translated in one pass
// when apiVersion and kind lead (AppendItem), else appended as appendObjects does. A func is made for
// each list (AppendUpstreamOfItem keeps the last kind it saw).
func fusedObjects() stream.Objects {
	o := appendObjects
	o.AppendItem = translator.AppendUpstreamOfItem(schema.GroupResource{Group: "cluster.hypershift.openshift.io", Resource: "machines"})
	return o
}

var translator = body.New(translate.NewTable(routes.Routes))

// FuzzList: whatever the backend sends as a list, List never panics, and what it writes when it
// succeeds is one JSON value; a ListReader whose items are appended (AppendObject) reads the same, and
// so does one that validates and translates them in one pass (AppendItem), with the same error, however
// the source's reads are cut.
func FuzzList(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"MachineList","metadata":{"resourceVersion":"1"},"items":[` + machine + `]}`,
		`{"items":null}`, `{"items":[]}`, `{"items":[1,"a",null]}`, `{"items":{}}`, `[]`, `{`, ``, `{"items":[{}]} {}`,
		`{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadataList","items":[{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"ownerReferences":[{"apiVersion":"cluster.hypershift.openshift.io/v1beta1"}]}}]}`,
		`{"kind":"MachineList","items":[` + machine + `,` + strings.Replace(machine, `"c"`, `"c`+"\x01"+`"`, 1) + `,` + machine + `]}`,
		`{"kind":"MachineList","items":[` + machine + `,` + strings.Replace(machine, `"spec":`, `"kind":"Status","spec":`, 1) + `,` + machine + `]}`,
		`{"kind":"MachineList","items":[` + machine + `,` + strings.Replace(machine, `"spec":`, `"kind":"Other",`, 1) + `,` + machine + `]}`,
		`{"kind":"MachineList","items":[` + machine + `,{"kind":"Status","apiVersion":"v1","code":1},` + machine + `]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		err := stream.List(&out, bytes.NewReader(data), objects)
		appended, appendErr := io.ReadAll(stream.NewListReader(bytes.NewReader(data), appendObjects))
		if (err == nil) != (appendErr == nil) || err == nil && !bytes.Equal(out.Bytes(), appended) {
			t.Errorf("List(%q) = %q, %v; appending, %q, %v", data, out.Bytes(), err, appended, appendErr)
		}
		for _, chunk := range []int{len(data) + 1, 7, 1} {
			if len(data)/chunk > 4096 {
				continue // an item is read again after every read of the source: quadratic
			}
			appended, appendErr := io.ReadAll(stream.NewListReader(&chunked{data: data, n: chunk}, appendObjects))
			fused, fusedErr := io.ReadAll(stream.NewListReader(&chunked{data: data, n: chunk}, fusedObjects()))
			if fmt.Sprint(fusedErr) != fmt.Sprint(appendErr) || !bytes.Equal(fused, appended) {
				t.Errorf("ListReader(%q), source reads of %d: in one pass %q, %v; appending, %q, %v", data, chunk, fused, fusedErr, appended, appendErr)
			}
		}
		if err != nil {
			return
		}
		if !json.Valid(out.Bytes()) {
			t.Errorf("List(%q) wrote invalid JSON %q", data, out.Bytes())
		}
	})
}

// FuzzWatch: whatever the backend sends as a watch, Watch never panics, writes only whole JSON events
// one per line, and ends a stream it cannot translate with an ERROR event.
func FuzzWatch(f *testing.F) {
	for _, seed := range []string{
		`{"type":"ADDED","object":` + machine + "}\n" + `{"type":"BOOKMARK","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","metadata":{"resourceVersion":"2"}}}` + "\n",
		`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410,"message":"machines.cluster.hypershift.openshift.io gone"}}`,
		`{"type":"DELETED","object":{}}`, `{"object":{},"type":"ADDED"}`, `{"type":"NOPE","object":{}}`, `{"type":1}`, `[]`, `{"type":"ADDED","obj`,
		"\n\n", `{"type":"MODIFIED","object":{"apiVersion":"cluster.hypershift.openshift.io/v1beta2","kind":"Machine","spec":[]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		err := stream.Watch(&out, nil, bytes.NewReader(data), objects)
		var last []byte
		lines := bufio.NewScanner(&out)
		lines.Buffer(nil, len(data)*4+1<<16)
		for lines.Scan() {
			last = append(last[:0], lines.Bytes()...)
			if !json.Valid(last) {
				t.Fatalf("Watch(%q) wrote the invalid event %q", data, last)
			}
		}
		var writeErr *stream.WriteError
		if err == nil || errors.As(err, &writeErr) || errors.Is(err, io.ErrUnexpectedEOF) {
			return
		}
		var event struct{ Type string }
		if json.Unmarshal(last, &event); event.Type != "ERROR" {
			t.Errorf("Watch(%q) failed (%v) without an ERROR event; last line %q", data, err, last)
		}
	})
}

// FuzzSharedWatchReader: a WatchReader that shares its translations hands on exactly what one that does
// not would (events, ERROR events and their stream offsets, and Err), whatever the sizes of the
// source's reads and of its caller's, and whether the events were translated before or not. (The offset
// translate.Scan names in a syntax error is one in the reader's buffer, which depends on the reads:
// bufferOffset drops it.)
func FuzzSharedWatchReader(f *testing.F) {
	event := `{"type":"MODIFIED","object":` + machine + "}"
	for _, seed := range []string{
		event + "\n" + event + "\n",
		event + "\r\n \t" + event + "  \n\n" + event,
		event + event + "\n" + event + " " + event + "\n",
		event + "\n" + `{"type":"ADDED","object":` + machine + "}}\n" + event + "\n",
		"{\n\"type\": \"ADDED\",\n\"object\": " + machine + "\n}\n" + event + "\n",
		event + "\n" + `{"type":"ERROR","object":{"kind":"Status","code":410}}` + "\n" + `{"type":"ADD`,
	} {
		f.Add([]byte(seed), uint8(7), uint8(64))
	}
	f.Fuzz(func(t *testing.T, data []byte, srcChunk, readSize uint8) {
		want, wantErr := readWatch(stream.NewWatchReader(bytes.NewReader(data), objects), 512)
		shared := stream.NewShared(1 << 20)
		for i, chunk := range []int{len(data) + 1, int(srcChunk)%32 + 1, 1} {
			r := stream.NewSharedWatchReader(&chunked{data: data, n: chunk}, objects, shared, "machines")
			got, err := readWatch(r, int(readSize)%1024+1)
			if !bytes.Equal(bufferOffset(got), bufferOffset(want)) || string(bufferOffset([]byte(fmt.Sprint(err)))) != string(bufferOffset([]byte(fmt.Sprint(wantErr)))) {
				t.Fatalf("pass %d (source reads of %d): got %q, %v\nwant %q, %v", i, chunk, got, err, want, wantErr)
			}
		}
	})
}

var bufferOffsets = regexp.MustCompile(` at offset [0-9]+ \(stream offset`)

func bufferOffset(b []byte) []byte { return bufferOffsets.ReplaceAll(b, []byte(" (stream offset")) }

// readWatch reads r to its end through a buffer of size bytes.
func readWatch(r *stream.WatchReader, size int) ([]byte, error) {
	var out []byte
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return out, r.Err()
		}
	}
}

// chunked reads data at most n bytes at a time.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// TestTableAsWhole: a Table read row by row (Objects.Row, body.Translator.TableRow) is translated into
// the bytes its whole translation (body.Translator.UpstreamOfValid) makes: kubectl get's Tables, of
// metadata and with includeObject=Object, as kube-apiserver writes them (a newline after the object).
func TestTableAsWhole(t *testing.T) {
	machines := schema.GroupResource{Group: "cluster.hypershift.openshift.io", Resource: "machines"}
	metadata := strings.Replace(machine, `"kind":"Machine"`, `"kind":"PartialObjectMetadata"`, 1)
	metadata = strings.Replace(metadata, `cluster.hypershift.openshift.io/v1beta2","kind":"PartialObjectMetadata"`, `meta.k8s.io/v1","kind":"PartialObjectMetadata"`, 1)
	metadata = metadata[:strings.Index(metadata, `,"spec"`)] + "}"
	for _, object := range []string{metadata, machine, "null"} {
		table := `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},` +
			`"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"","priority":0},{"name":"Kind","type":"string","format":"","description":"","priority":1}],` +
			`"rows":[`
		for i := range 50 {
			if i > 0 {
				table += ","
			}
			table += fmt.Sprintf(`{"cells":["m-%d","AWSMachine.infrastructure.cluster.hypershift.openshift.io"],"object":%s}`, i, object)
		}
		table += "]}\n"
		whole, err := translator.UpstreamOfValid(machines)([]byte(table))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(whole), "hypershift") {
			t.Fatalf("the whole translation left a private group: %s", whole)
		}
		o := fusedObjects()
		o.Row = translator.AppendTableRow
		got, err := io.ReadAll(smallReads(stream.NewListReader(strings.NewReader(table), o)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, whole) {
			t.Errorf("row by row:\n%s\nwhole:\n%s", got, whole)
		}
	}
}

// smallReads reads at most 7 bytes at a time from r.
func smallReads(r io.Reader) io.Reader { return readAtMost{r, 7} }

type readAtMost struct {
	r io.Reader
	n int
}

func (r readAtMost) Read(p []byte) (int, error) { return r.r.Read(p[:min(len(p), r.n)]) }
