package training

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestNodeSliceDeterministicDisjoint(t *testing.T) {
	const n, nodes = 1000, 3
	seen := make([]int, n)
	for node := 0; node < nodes; node++ {
		a, err := NodeSlice(n, 9, node, nodes)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := NodeSlice(n, 9, node, nodes)
		if !slices.Equal(a, b) {
			t.Fatalf("node %d: two calls differ", node)
		}
		c, _ := NodeSlice(n, 10, node, nodes)
		if slices.Equal(a, c) {
			t.Fatalf("node %d: seed does not change the slice", node)
		}
		for _, i := range a {
			seen[i]++
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("sample %d dealt %d times", i, c)
		}
	}
	if _, err := NodeSlice(100, 1, 3, 3); err == nil {
		t.Fatal("node index out of range accepted")
	}
	if _, err := NodeSlice(100, 1, 0, 3); err == nil {
		t.Fatal("too few samples for the nodes accepted")
	}
}

func TestBatcherEpochCoversSlice(t *testing.T) {
	d, _ := NewSynthetic(100, 2, 2, 1)
	idx := []int{3, 5, 7, 11, 13, 17}
	b, err := NewBatcher(d, idx, 2, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for i := 0; i < 3; i++ {
		got = append(got, b.Next().X...)
	}
	want := d.Batch(idx).X
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatal("one epoch did not visit every sample once")
	}
	if _, err := NewBatcher(d, []int{1, 200}, 1, 1); err == nil {
		t.Fatal("index outside the data set accepted")
	}
}

func TestCorpusWindows(t *testing.T) {
	c, err := NewCorpus(strings.NewReader("abcabcabcabcabcabcabcabcabcabc"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Vocab) != "abc" {
		t.Fatalf("vocab %q", c.Vocab)
	}
	train, held, err := c.Windows(3, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	b := train.Batch([]int{0, 1})
	if c.Decode(b.Tokens) != "abcbca" || b.Y[0] != 0 || b.Y[1] != 1 {
		t.Fatalf("windows %q labels %v", c.Decode(b.Tokens), b.Y)
	}
	if train.Len()+held.Len() != c.Len()-3 {
		t.Fatalf("split loses or repeats targets: %d + %d for %d", train.Len(), held.Len(), c.Len()-3)
	}
	if _, err := NewCorpus(strings.NewReader("abcdef"), 5); err == nil {
		t.Fatal("corpus over the limit accepted")
	}
}

func TestByteCorpusTokensAreBytes(t *testing.T) {
	c, err := NewByteCorpus(strings.NewReader("abcabcabcabcabcabcabcabc"), 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Vocab) != 256 {
		t.Fatalf("vocabulary of %d", len(c.Vocab))
	}
	train, _, err := c.Windows(3, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	b := train.Batch([]int{0})
	if !slices.Equal(b.Tokens, []int{'a', 'b', 'c'}) || b.Y[0] != 'a' || c.Decode(b.Tokens) != "abc" {
		t.Fatalf("tokens %v label %v", b.Tokens, b.Y)
	}
	if _, err := NewByteCorpus(strings.NewReader("abcdef"), 5); err == nil {
		t.Fatal("corpus over the limit accepted")
	}
}

func TestCorpusOpticks(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	c, err := NewCorpus(bytes.NewReader(text), 1<<24)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Vocab) < 60 || len(c.Vocab) > 256 {
		t.Fatalf("vocabulary of %d bytes", len(c.Vocab))
	}
	train, held, err := c.Windows(16, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if held.Len() < c.Len()/20 || train.Len() < c.Len()/2 {
		t.Fatalf("split %d/%d of %d", train.Len(), held.Len(), c.Len())
	}
}

func idxBytes(dims []uint32, body []byte) []byte {
	var b bytes.Buffer
	b.Write([]byte{0, 0, 8, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&b, binary.BigEndian, d)
	}
	b.Write(body)
	return b.Bytes()
}

func TestReadIDX(t *testing.T) {
	good := idxBytes([]uint32{2, 3}, []byte{1, 2, 3, 4, 5, 6})
	x, err := ReadIDX(bytes.NewReader(good), 100)
	if err != nil || !slices.Equal(x.Dims, []int{2, 3}) || !bytes.Equal(x.Data, []byte{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("ReadIDX = %+v, %v", x, err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	if x, err := ReadIDX(&gz, 100); err != nil || len(x.Data) != 6 {
		t.Fatalf("gzip: %+v, %v", x, err)
	}
	bad := map[string][]byte{
		"empty":            nil,
		"short header":     {0, 0, 8},
		"wrong type":       {0, 0, 0x0d, 1, 0, 0, 0, 1, 0, 0, 0, 0},
		"no dims":          {0, 0, 8, 0},
		"too many dims":    {0, 0, 8, 5, 0, 0, 0, 1},
		"truncated dims":   {0, 0, 8, 2, 0, 0, 0, 1, 0, 0},
		"zero dim":         idxBytes([]uint32{0}, nil),
		"truncated body":   idxBytes([]uint32{2, 3}, []byte{1, 2, 3}),
		"oversized":        idxBytes([]uint32{101}, nil),
		"oversized total":  idxBytes([]uint32{11, 10}, nil),
		"overflowing dims": idxBytes([]uint32{1 << 31, 1 << 31, 1 << 31}, nil),
	}
	for name, in := range bad {
		if _, err := ReadIDX(bytes.NewReader(in), 100); !errors.Is(err, ErrIDX) {
			t.Errorf("%s: error %v, want ErrIDX", name, err)
		}
	}
}

func TestImageData(t *testing.T) {
	img := idxBytes([]uint32{2, 2, 2}, []byte{0, 255, 0, 0, 51, 51, 51, 51})
	lab := idxBytes([]uint32{2}, []byte{9, 3})
	d, err := NewImageData(bytes.NewReader(img), bytes.NewReader(lab), 10)
	if err != nil {
		t.Fatal(err)
	}
	b := d.Batch([]int{1, 0})
	if b.Y[0] != 3 || b.Y[1] != 9 || b.X[0] != 0.2 || b.X[5] != 1 {
		t.Fatalf("batch %+v", b)
	}
	if _, err := NewImageData(bytes.NewReader(img), bytes.NewReader(lab), 5); err == nil {
		t.Fatal("label above the class count accepted")
	}
	short := idxBytes([]uint32{3}, []byte{1, 2, 3})
	if _, err := NewImageData(bytes.NewReader(img), bytes.NewReader(short), 10); err == nil {
		t.Fatal("label count mismatch accepted")
	}
}

func FuzzIDX(f *testing.F) {
	f.Add(idxBytes([]uint32{2, 3}, []byte{1, 2, 3, 4, 5, 6}))
	f.Add(idxBytes([]uint32{4}, []byte{1, 2}))
	f.Add(idxBytes([]uint32{1, 1, 1, 1}, []byte{7}))
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		x, err := ReadIDX(bytes.NewReader(in), 1<<16)
		if err != nil {
			return
		}
		n := 1
		for _, d := range x.Dims {
			n *= d
		}
		if n != len(x.Data) || n > 1<<16 {
			t.Fatalf("dims %v with %d bytes", x.Dims, len(x.Data))
		}
	})
}
