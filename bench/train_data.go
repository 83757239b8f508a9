package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/training"
)

// valParts: the validation split is one part in valParts of the training data.
const valParts = 10

// task is the data and model factory of one benchmark run. The data is split three ways:
// the workers share out pool; val, taken out of the training data, is for choosing
// settings; test is held out (charlm: the end of the corpus; fmnist: the t10k set) and only
// reported.
type task struct {
	train    training.Dataset
	pool     []int
	val      training.Batch
	test     training.Batch
	newModel func(seed uint64) (training.Model, error)
	params   int
	accuracy bool
}

// loadTask loads the task's data once for every seed. The validation split and the
// evaluation samples are drawn with opt.Seed, so that every seed is scored on the same
// samples.
func loadTask(opt TrainOptions) (*task, error) {
	var tk *task
	var err error
	switch opt.Task {
	case "charlm":
		tk, err = loadCharLM(opt)
	case "fmnist":
		tk, err = loadFMNIST(opt)
	default:
		return nil, fmt.Errorf("bench train: unknown task %q (want charlm or fmnist)", opt.Task)
	}
	if err != nil {
		return nil, err
	}
	if opt.Spec != nil {
		tk.newModel = specModel(opt.Spec)
	}
	pool, val, err := validationSplit(tk.train.Len(), opt.Seed)
	if err != nil {
		return nil, err
	}
	tk.pool = pool
	pick := evalIndex(len(val), opt.EvalSamples, opt.Seed)
	for i, j := range pick {
		pick[i] = val[j]
	}
	tk.val = tk.train.Batch(pick)
	m, err := tk.newModel(opt.Seed)
	if err != nil {
		return nil, err
	}
	tk.params = training.NumParams(m.Params())
	return tk, nil
}

// validationSplit takes one part in valParts of the samples [0, n), in chunks, out as the
// validation split, and returns the rest as the pool the workers share out. Both are sorted
// and a function of (n, seed).
func validationSplit(n int, seed uint64) (pool, val []int, err error) {
	val, err = training.NodeSlice(n, seed^0x76616c, 0, valParts)
	if err != nil {
		return nil, nil, fmt.Errorf("bench train: validation split: %w", err)
	}
	slices.Sort(val)
	pool = make([]int, 0, n-len(val))
	for i, j := 0, 0; i < n; i++ {
		if j < len(val) && val[j] == i {
			j++
			continue
		}
		pool = append(pool, i)
	}
	return pool, val, nil
}

// workerSlices deals the pool to the workers: disjoint slices that together cover it.
func workerSlices(pool []int, seed uint64, workers int) ([][]int, error) {
	out := make([][]int, workers)
	for w := range out {
		idx, err := training.NodeSlice(len(pool), seed, w, workers)
		if err != nil {
			return nil, err
		}
		for i, j := range idx {
			idx[i] = pool[j]
		}
		out[w] = idx
	}
	return out, nil
}

// DefaultCorpus is the path of Go's copy of Newton's Opticks, the default charlm corpus.
func DefaultCorpus() string { return configs.DefaultCorpus() }

func loadCharLM(opt TrainOptions) (*task, error) {
	path := opt.Corpus
	if path == "" {
		path = DefaultCorpus()
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench train: corpus: %w", err)
	}
	defer f.Close()
	c, err := training.NewCorpus(f, 64<<20)
	if err != nil {
		return nil, err
	}
	train, held, err := c.Windows(opt.Context, 0.1)
	if err != nil {
		return nil, err
	}
	size := training.CharLMSize{Vocab: len(c.Vocab), Context: opt.Context, Embed: opt.Embed, Hidden: opt.Hidden}
	return &task{
		train: train,
		test:  held.Batch(evalIndex(held.Len(), opt.EvalSamples, opt.Seed)),
		newModel: func(seed uint64) (training.Model, error) {
			return training.NewCharLM(size, rand.New(rand.NewPCG(seed, 0)))
		},
	}, nil
}

func loadFMNIST(opt TrainOptions) (*task, error) {
	train, err := node.LoadFMNIST(opt.FMNISTDir, "train")
	if err != nil {
		return nil, fmt.Errorf("bench train: %w (install dataset-fashion-mnist or pass --fmnist-dir)", err)
	}
	test, err := node.LoadFMNIST(opt.FMNISTDir, "t10k")
	if err != nil {
		return nil, fmt.Errorf("bench train: %w", err)
	}
	return &task{
		train: train, accuracy: true,
		test: test.Batch(evalIndex(test.Len(), opt.EvalSamples, opt.Seed)),
		newModel: func(seed uint64) (training.Model, error) {
			return training.NewClassifier(train.Pixels, opt.Hidden, 10, rand.New(rand.NewPCG(seed, 0)))
		},
	}, nil
}

// evalIndex picks n of total samples (all of them when n >= total), deterministically.
func evalIndex(total, n int, seed uint64) []int {
	if n >= total {
		return training.Range(0, total)
	}
	idx := rand.New(rand.NewPCG(seed, 0x6576616c)).Perm(total)[:n]
	slices.Sort(idx)
	return idx
}
