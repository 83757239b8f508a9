package training

import (
	"fmt"
	"io"
	"slices"
)

// Corpus is a text read as bytes, with a byte-level vocabulary built from the text itself.
type Corpus struct {
	// Vocab lists the distinct bytes of the text in increasing order; a byte's token id is
	// its index here.
	Vocab []byte
	ids   []int
}

// NewCorpus reads the whole of r (at most maxBytes) and builds the vocabulary.
func NewCorpus(r io.Reader, maxBytes int) (*Corpus, error) {
	text, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("reading corpus: %w", err)
	}
	if len(text) > maxBytes {
		return nil, fmt.Errorf("%w: corpus larger than %d bytes", ErrData, maxBytes)
	}
	var seen [256]bool
	for _, c := range text {
		seen[c] = true
	}
	var index [256]int
	c := &Corpus{}
	for b := 0; b < 256; b++ {
		if seen[b] {
			index[b] = len(c.Vocab)
			c.Vocab = append(c.Vocab, byte(b))
		}
	}
	if len(c.Vocab) < 2 {
		return nil, fmt.Errorf("%w: corpus has %d distinct bytes", ErrData, len(c.Vocab))
	}
	c.ids = make([]int, len(text))
	for i, b := range text {
		c.ids[i] = index[b]
	}
	return c, nil
}

// NewByteCorpus reads the whole of r (at most maxBytes) as a corpus whose vocabulary is
// every byte value: a byte's token id is the byte itself, so the model's shapes do not
// depend on which text a node reads.
func NewByteCorpus(r io.Reader, maxBytes int) (*Corpus, error) {
	text, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("reading corpus: %w", err)
	}
	if len(text) > maxBytes {
		return nil, fmt.Errorf("%w: corpus larger than %d bytes", ErrData, maxBytes)
	}
	c := &Corpus{Vocab: make([]byte, 256), ids: make([]int, len(text))}
	for b := range c.Vocab {
		c.Vocab[b] = byte(b)
	}
	for i, b := range text {
		c.ids[i] = int(b)
	}
	return c, nil
}

// Len is the length of the text in bytes.
func (c *Corpus) Len() int { return len(c.ids) }

// Windows splits the text into a training part and a held-out tail of heldOut (a fraction
// in (0,1)) of the text, each as a data set of context-byte windows labelled with the byte
// that follows. The two parts share no prediction target.
func (c *Corpus) Windows(context int, heldOut float64) (train, held *TextWindows, err error) {
	if context < 1 || !(heldOut > 0 && heldOut < 1) {
		return nil, nil, fmt.Errorf("%w: context %d, held-out fraction %v", ErrData, context, heldOut)
	}
	cut := len(c.ids) - int(float64(len(c.ids))*heldOut)
	if cut <= context+1 || len(c.ids)-cut <= context+1 {
		return nil, nil, fmt.Errorf("%w: %d bytes are too few for context %d", ErrData, len(c.ids), context)
	}
	train = &TextWindows{ids: c.ids[:cut], context: context}
	held = &TextWindows{ids: c.ids[cut-context:], context: context}
	return train, held, nil
}

// TextWindows is a data set of fixed-length windows over token ids: sample i is the window
// ids[i:i+context] labelled with ids[i+context].
type TextWindows struct {
	ids     []int
	context int
}

var _ Dataset = (*TextWindows)(nil)

// Len implements Dataset.
func (w *TextWindows) Len() int { return len(w.ids) - w.context }

// Batch implements Dataset.
func (w *TextWindows) Batch(idx []int) Batch {
	b := Batch{N: len(idx), Tokens: make([]int, 0, len(idx)*w.context), Y: make([]int, len(idx))}
	for k, i := range idx {
		b.Tokens = append(b.Tokens, w.ids[i:i+w.context]...)
		b.Y[k] = w.ids[i+w.context]
	}
	return b
}

// Decode maps token ids back to text (for samples and debugging).
func (c *Corpus) Decode(ids []int) string {
	out := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(c.Vocab) {
			out = append(out, c.Vocab[id])
		}
	}
	return string(slices.Clip(out))
}
