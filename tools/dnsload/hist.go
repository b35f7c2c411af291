package main

import (
	"math/bits"
	"sync/atomic"
)

// Log-bucket latency histogram over microseconds, HDR-style: values below 128 µs are exact,
// above that every power of two is split into 64 sub-buckets (relative error < 1.6 %).
// Buckets are atomics so receive goroutines record without locks; the reporter drains them.
const (
	subBits    = 6
	subCount   = 1 << subBits // 64
	linearTop  = 2 * subCount // 128
	numBuckets = linearTop + 58*subCount
)

func bucketOf(us int64) int {
	if us < 0 {
		us = 0
	}
	v := uint64(us)
	if v < linearTop {
		return int(v)
	}
	shift := bits.Len64(v) - (subBits + 1)
	idx := linearTop + (shift-1)*subCount + int(v>>uint(shift)) - subCount
	if idx >= numBuckets {
		return numBuckets - 1
	}
	return idx
}

// bucketUpper is the largest value that falls into bucket idx.
func bucketUpper(idx int) int64 {
	if idx < linearTop {
		return int64(idx)
	}
	shift := (idx-linearTop)/subCount + 1
	mant := int64((idx-linearTop)%subCount + subCount)
	return ((mant + 1) << uint(shift)) - 1
}

type atomicHist struct {
	b   [numBuckets]atomic.Int64
	max atomic.Int64
}

func (h *atomicHist) record(us int64) {
	h.b[bucketOf(us)].Add(1)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// drain moves the counts into a plain histogram and zeroes them.
func (h *atomicHist) drain() *hist {
	out := &hist{}
	for i := range h.b {
		if c := h.b[i].Swap(0); c != 0 {
			out.b[i] = c
			out.n += c
		}
	}
	out.max = h.max.Swap(0)
	return out
}

type hist struct {
	b   [numBuckets]int64
	n   int64
	max int64
}

func (h *hist) add(o *hist) {
	for i := range o.b {
		h.b[i] += o.b[i]
	}
	h.n += o.n
	if o.max > h.max {
		h.max = o.max
	}
}

// quantile returns the upper edge of the bucket holding the q-quantile (capped at the max).
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var cum int64
	for i := range h.b {
		cum += h.b[i]
		if cum >= rank {
			u := bucketUpper(i)
			if u > h.max {
				u = h.max
			}
			return u
		}
	}
	return h.max
}

// buckets lists the non-empty buckets as [upper edge in ms, count]: the answers' latency
// distribution, which the analysis draws as the share of answers slower than x.
func (h *hist) buckets() [][2]float64 {
	var out [][2]float64
	for i, c := range h.b {
		if c != 0 {
			out = append(out, [2]float64{ms(bucketUpper(i)), float64(c)})
		}
	}
	return out
}
