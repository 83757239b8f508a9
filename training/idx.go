package training

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// IDX is a parsed IDX file of unsigned bytes (type code 0x08): the format of the MNIST
// and Fashion-MNIST distributions.
type IDX struct {
	Dims []int
	Data []byte
}

// ErrIDX reports a malformed IDX stream.
var ErrIDX = errors.New("training: bad IDX data")

const idxMaxDims = 4

// ReadIDX parses one IDX stream of unsigned bytes. It checks the header and the total size
// against maxElems before allocating, and fails on a short body. A gzip stream (as the
// distributed .gz files) is decompressed transparently.
func ReadIDX(r io.Reader, maxElems int) (*IDX, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %v", ErrIDX, err)
		}
		defer zr.Close()
		br = bufio.NewReader(zr)
	}
	var head [4]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrIDX, err)
	}
	if head[0] != 0 || head[1] != 0 || head[2] != 0x08 {
		return nil, fmt.Errorf("%w: magic %x (want 0000 08 nn, unsigned bytes)", ErrIDX, head[:3])
	}
	nd := int(head[3])
	if nd < 1 || nd > idxMaxDims {
		return nil, fmt.Errorf("%w: %d dimensions (want 1..%d)", ErrIDX, nd, idxMaxDims)
	}
	dims := make([]int, nd)
	total := 1
	for i := range dims {
		var d [4]byte
		if _, err := io.ReadFull(br, d[:]); err != nil {
			return nil, fmt.Errorf("%w: dimension %d: %v", ErrIDX, i, err)
		}
		v := binary.BigEndian.Uint32(d[:])
		if v == 0 || uint64(v) > uint64(maxElems) || uint64(total)*uint64(v) > uint64(maxElems) {
			return nil, fmt.Errorf("%w: dimension %d is %d; total exceeds the limit of %d elements or is empty", ErrIDX, i, v, maxElems)
		}
		dims[i] = int(v)
		total *= int(v)
	}
	data := make([]byte, total)
	if _, err := io.ReadFull(br, data); err != nil {
		return nil, fmt.Errorf("%w: body of %d bytes: %v", ErrIDX, total, err)
	}
	return &IDX{Dims: dims, Data: data}, nil
}

// ImageData is a labelled image set: pixels as bytes, features scaled to [0,1].
type ImageData struct {
	Pixels  int // per image
	Classes int
	img     []byte
	lab     []byte
}

var _ Dataset = (*ImageData)(nil)

// MaxIDXElems bounds the IDX files NewImageData accepts: 100k images of 32×32 pixels.
const MaxIDXElems = 100_000 * 32 * 32

// NewImageData reads an IDX image file (n×h×w) and an IDX label file (n) with labels below
// classes.
func NewImageData(images, labels io.Reader, classes int) (*ImageData, error) {
	im, err := ReadIDX(images, MaxIDXElems)
	if err != nil {
		return nil, fmt.Errorf("reading images: %w", err)
	}
	lb, err := ReadIDX(labels, MaxIDXElems)
	if err != nil {
		return nil, fmt.Errorf("reading labels: %w", err)
	}
	if len(im.Dims) != 3 || len(lb.Dims) != 1 || im.Dims[0] != lb.Dims[0] {
		return nil, fmt.Errorf("%w: images %v and labels %v do not match", ErrIDX, im.Dims, lb.Dims)
	}
	for i, l := range lb.Data {
		if int(l) >= classes {
			return nil, fmt.Errorf("%w: label %d of sample %d is not below %d", ErrIDX, l, i, classes)
		}
	}
	return &ImageData{Pixels: im.Dims[1] * im.Dims[2], Classes: classes, img: im.Data, lab: lb.Data}, nil
}

// Len implements Dataset.
func (d *ImageData) Len() int { return len(d.lab) }

// Batch implements Dataset.
func (d *ImageData) Batch(idx []int) Batch {
	b := Batch{N: len(idx), X: make([]float64, len(idx)*d.Pixels), Y: make([]int, len(idx))}
	for k, i := range idx {
		row := b.X[k*d.Pixels : (k+1)*d.Pixels]
		for j, p := range d.img[i*d.Pixels : (i+1)*d.Pixels] {
			row[j] = float64(p) / 255
		}
		b.Y[k] = int(d.lab[i])
	}
	return b
}
