package gomlx

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"tally/internal/fsguard"
)

// maxHeaderLen bounds a safetensors JSON header (the format's own limit is 100 MB).
const maxHeaderLen = 100 << 20

// TensorInfo describes one tensor inside a safetensors file.
type TensorInfo struct {
	// Name is the tensor's name.
	Name string
	// DType is the safetensors dtype ("F32", "F16", "BF16", ...).
	DType string
	// Shape is the tensor's dimensions.
	Shape []int
	// File is the path of the file holding the tensor.
	File string
	// Offset is the absolute byte offset of the data in File.
	Offset int64
	// Length is the data's length in bytes.
	Length int64
	// ropeHeads, when set (GGUF query and key projections of the llama
	// architecture), is the head count whose rotary halves llama.cpp's
	// converter interleaved; reading undoes it (unpermuteRope).
	ropeHeads int
}

// Numel is the number of elements of the tensor.
func (t TensorInfo) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// dtypeSize is the element size of the dtypes the reader can widen.
var dtypeSize = map[string]int{"F32": 4, "F16": 2, "BF16": 2}

type rawTensorHeader struct {
	DType       string  `json:"dtype"`
	Shape       []int   `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ReadSafetensorsHeader parses the header of one safetensors file and
// validates every entry (dtype known, offsets inside the file, size matching
// the shape).
func ReadSafetensorsHeader(path string) ([]TensorInfo, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("open weights: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	return parseSafetensorsHeader(f, st.Size(), path)
}

func parseSafetensorsHeader(r io.ReaderAt, size int64, path string) ([]TensorInfo, error) {
	var lenBuf [8]byte
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("%s: corrupt safetensors header: cannot read length: %w", path, err)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen == 0 || hlen > maxHeaderLen || int64(hlen) > size-8 {
		return nil, fmt.Errorf("%s: corrupt safetensors header: header length %d for a %d-byte file", path, hlen, size)
	}
	hbuf := make([]byte, hlen)
	if _, err := r.ReadAt(hbuf, 8); err != nil {
		return nil, fmt.Errorf("%s: corrupt safetensors header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hbuf, &raw); err != nil {
		return nil, fmt.Errorf("%s: corrupt safetensors header: %w", path, err)
	}
	dataStart := 8 + int64(hlen)
	dataLen := size - dataStart
	names := make([]string, 0, len(raw))
	for name := range raw {
		if name != "__metadata__" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]TensorInfo, 0, len(names))
	for _, name := range names {
		var h rawTensorHeader
		if err := json.Unmarshal(raw[name], &h); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: corrupt header entry: %w", path, name, err)
		}
		if len(h.DataOffsets) != 2 || h.DataOffsets[0] < 0 || h.DataOffsets[1] < h.DataOffsets[0] || h.DataOffsets[1] > dataLen {
			return nil, fmt.Errorf("%s: tensor %s: data_offsets %v outside the %d data bytes", path, name, h.DataOffsets, dataLen)
		}
		numel := int64(1)
		for _, d := range h.Shape {
			if d < 0 || (d > 0 && numel > math.MaxInt32*int64(64)/int64(d)) {
				return nil, fmt.Errorf("%s: tensor %s: invalid shape %v", path, name, h.Shape)
			}
			numel *= int64(d)
		}
		info := TensorInfo{Name: name, DType: h.DType, Shape: h.Shape, File: path,
			Offset: dataStart + h.DataOffsets[0], Length: h.DataOffsets[1] - h.DataOffsets[0]}
		if es, ok := dtypeSize[h.DType]; ok && numel*int64(es) != info.Length {
			return nil, fmt.Errorf("%s: tensor %s: %d bytes for shape %v of %s", path, name, info.Length, h.Shape, h.DType)
		}
		out = append(out, info)
	}
	return out, nil
}

// readTensorF32 reads one tensor and widens it to float32, from r (the
// bytes of info.File) or, when r is nil, from the file itself.
func readTensorF32(info TensorInfo, r io.ReaderAt) ([]float32, error) {
	es, plain := dtypeSize[info.DType]
	if !plain && !isBlockType(info.DType) {
		return nil, fmt.Errorf("%s: tensor %s: unsupported dtype %s (want F32, F16 or BF16)", info.File, info.Name, info.DType)
	}
	if r == nil {
		f, err := openRegular(info.File)
		if err != nil {
			return nil, fmt.Errorf("open weights: %w", err)
		}
		defer f.Close()
		r = f
	}
	buf := make([]byte, info.Length)
	if _, err := r.ReadAt(buf, info.Offset); err != nil {
		return nil, fmt.Errorf("%s: tensor %s: read: %w", info.File, info.Name, err)
	}
	var out []float32
	switch {
	case !plain:
		block, _ := ggmlTypeNamed(info.DType)
		var err error
		if out, err = block.dequantize(buf, info.Numel()); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", info.File, info.Name, err)
		}
	default:
		out = make([]float32, int(info.Length)/es)
		switch info.DType {
		case "F32":
			for i := range out {
				out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
			}
		case "BF16":
			for i := range out {
				out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(buf[2*i:])) << 16)
			}
		case "F16":
			for i := range out {
				out[i] = halfToFloat32(binary.LittleEndian.Uint16(buf[2*i:]))
			}
		}
	}
	if info.ropeHeads > 0 {
		cols := 1
		if len(info.Shape) == 2 {
			cols = info.Shape[1]
		}
		var err error
		if out, err = unpermuteRope(out, info.ropeHeads, cols); err != nil {
			return nil, fmt.Errorf("%s: tensor %s: %w", info.File, info.Name, err)
		}
	}
	return out, nil
}

// halfToFloat32 widens an IEEE 754 binary16 value.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // Inf / NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: value = mant * 2^-24.
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	default:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	}
}

// WeightIndex maps tensor names to their location across a model's
// safetensors files.
type WeightIndex struct {
	// Tensors maps a tensor name to its description.
	Tensors map[string]TensorInfo
	// Files lists the safetensors files, sorted.
	Files []string
	// data holds the files' bytes when they were read from an fs.FS
	// (OpenWeightsFS); nil: read from the OS files.
	data map[string][]byte
}

// OpenWeightsFS indexes the weights of a model held in fsys, in one
// model.safetensors file at its root; label names the model in errors
// (the file is label/model.safetensors).
func OpenWeightsFS(fsys fs.FS, label string) (*WeightIndex, error) {
	data, err := fs.ReadFile(fsys, "model.safetensors")
	if err != nil {
		return nil, fmt.Errorf("open weights of %s: %w", label, err)
	}
	path := label + "/model.safetensors"
	infos, err := parseSafetensorsHeader(bytes.NewReader(data), int64(len(data)), path)
	if err != nil {
		return nil, err
	}
	w := &WeightIndex{Tensors: map[string]TensorInfo{}, Files: []string{path}, data: map[string][]byte{path: data}}
	for _, t := range infos {
		w.Tensors[t.Name] = t
	}
	return w, nil
}

// OpenWeights indexes the weights of a model directory: model.safetensors,
// else the shards listed by model.safetensors.index.json, else every
// *.safetensors file; each read as OpenWeightsIn reads them from
// ModelFolder(dir, false).
func OpenWeights(dir string) (*WeightIndex, error) {
	return OpenWeightsIn(ModelFolder(dir, false), dir)
}

// OpenWeightsIn is OpenWeights reading the files as folder allows: each
// weight file is checked before its header is read, the index is at most
// 64 MiB.
func OpenWeightsIn(folder fsguard.Folder, dir string) (*WeightIndex, error) {
	var files []string
	single := filepath.Join(dir, "model.safetensors")
	indexPath := filepath.Join(dir, "model.safetensors.index.json")
	if _, err := os.Lstat(single); err == nil {
		files = []string{single}
	} else if data, err := folder.ReadFile(indexPath, maxModelJSON); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(data, &idx); err != nil {
			return nil, fmt.Errorf("parse %s: %w", indexPath, err)
		}
		if len(idx.WeightMap) == 0 {
			return nil, fmt.Errorf("%s: empty weight_map", indexPath)
		}
		seen := map[string]bool{}
		for _, f := range idx.WeightMap {
			if f != filepath.Base(f) {
				return nil, fmt.Errorf("%s: shard name %q is not a plain file name", indexPath, f)
			}
			if !seen[f] {
				seen[f] = true
				files = append(files, filepath.Join(dir, f))
			}
		}
		sort.Strings(files)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", indexPath, err)
	} else {
		files, _ = filepath.Glob(filepath.Join(dir, "*.safetensors"))
		sort.Strings(files)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no model.safetensors, model.safetensors.index.json or *.safetensors", dir)
	}
	w := &WeightIndex{Tensors: map[string]TensorInfo{}, Files: files}
	for _, f := range files {
		if err := folder.Check(f); err != nil {
			return nil, fmt.Errorf("open weights: %w", err)
		}
		infos, err := ReadSafetensorsHeader(f)
		if err != nil {
			return nil, err
		}
		for _, t := range infos {
			if prev, dup := w.Tensors[t.Name]; dup {
				return nil, fmt.Errorf("%s: tensor %s also in %s", f, t.Name, prev.File)
			}
			w.Tensors[t.Name] = t
		}
	}
	return w, nil
}

// Read loads a tensor as float32, checking its shape against want.
func (w *WeightIndex) Read(name string, want ...int) ([]float32, error) {
	info, ok := w.Tensors[name]
	if !ok {
		return nil, fmt.Errorf("%s: tensor %s: missing", filepath.Dir(w.Files[0]), name)
	}
	if !equalInts(info.Shape, want) {
		return nil, fmt.Errorf("%s: tensor %s: shape %v, want %v", info.File, name, info.Shape, want)
	}
	if b, ok := w.data[info.File]; ok {
		return readTensorF32(info, bytes.NewReader(b))
	}
	return readTensorF32(info, nil)
}

// Has reports whether the weights hold a tensor.
func (w *WeightIndex) Has(name string) bool {
	_, ok := w.Tensors[name]
	return ok
}

// DTypes lists the distinct dtypes of the stored tensors.
func (w *WeightIndex) DTypes() []string {
	set := map[string]bool{}
	for _, t := range w.Tensors {
		set[t.DType] = true
	}
	out := make([]string, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
