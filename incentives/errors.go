package incentives

import "errors"

// Sentinel errors. Functions wrap them with detail; test with errors.Is.
var (
	// ErrMalformed: bytes that do not decode, are not canonical, or break a size limit.
	ErrMalformed = errors.New("malformed")
	// ErrBadEvidence: evidence that does not prove the offence it claims. Nobody is
	// penalised for it; a record that includes it is refused whole.
	ErrBadEvidence = errors.New("evidence does not prove an offence")
	// ErrOutsideWindow: evidence about a round outside the evidence window of the record.
	ErrOutsideWindow = errors.New("evidence outside the round window")
	// ErrAlreadyPenalised: Build leaves out evidence of an offence already penalised (or
	// proven by another item it includes). Apply still accepts such evidence and counts it
	// once.
	ErrAlreadyPenalised = errors.New("offence already penalised")
	// ErrRoundOrder: a record whose round is not the next one the ledger expects.
	ErrRoundOrder = errors.New("record out of round order")
	// ErrRootMismatch: a record whose previous root is not the ledger's head, or whose new
	// root is not what applying it gives.
	ErrRootMismatch = errors.New("root mismatch")
	// ErrBadParams: parameters or genesis that cannot start a ledger.
	ErrBadParams = errors.New("bad ledger parameters")
)
