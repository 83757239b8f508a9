package compress

// CodeStats counts what a message's payload is made of, for analysis (lowband bench
// train's codec statistics): the 2-bit factor codes by level, and the payload's bytes by
// kind.
type CodeStats struct {
	// Codes2 counts the 2-bit factor codes (Config.FactorBits 2), private and shared, by
	// level: Codes2[0] the level −3, then −1, 1 and 3. Padding is not counted.
	Codes2 [4]int
	// FactorCodeBytes and FactorScaleBytes are the low-rank factors' code and scale bytes
	// (private and shared); DenseBytes is the payload of the other pieces, IndexBytes the
	// part of it that is sparse pieces' indices.
	FactorCodeBytes, FactorScaleBytes, DenseBytes, IndexBytes int
}

// CodeStats returns m's CodeStats.
func (m *Message) CodeStats() CodeStats {
	var s CodeStats
	for i := range m.pieces {
		p := &m.pieces[i]
		if !p.lowRank() {
			s.DenseBytes += len(p.Codes) + len(p.Scales) + len(p.Idx)
			s.IndexBytes += len(p.Idx)
			continue
		}
		s.FactorCodeBytes += len(p.Codes) + len(p.QCodes) + len(p.SCodes)
		s.FactorScaleBytes += len(p.Scales) + len(p.QScales) + len(p.SScales)
		if p.Bits != bits2 {
			continue
		}
		s.count2(p.Codes, p.Hi-p.Lo, p.Rank)
		s.count2(p.QCodes, p.Shape[1], p.Rank)
		s.count2(p.SCodes, p.Shape[1], p.SRank)
	}
	return s
}

// count2 counts the 2-bit codes of ncol columns of n values each, every column padded to
// whole bytes (colsBytes).
func (s *CodeStats) count2(codes []byte, n, ncol int) {
	cb := codeBytes(n, bits2)
	for k := 0; k < ncol && (k+1)*cb <= len(codes); k++ {
		col := codes[k*cb : (k+1)*cb]
		for i := 0; i < n; i++ {
			c := int8(col[i/4]>>(2*(i%4))<<6) >> 6
			s.Codes2[c+2]++
		}
	}
}

// Add adds o's counts to s.
func (s *CodeStats) Add(o CodeStats) {
	for i, c := range o.Codes2 {
		s.Codes2[i] += c
	}
	s.FactorCodeBytes += o.FactorCodeBytes
	s.FactorScaleBytes += o.FactorScaleBytes
	s.DenseBytes += o.DenseBytes
	s.IndexBytes += o.IndexBytes
}
