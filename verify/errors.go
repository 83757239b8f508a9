package verify

import (
	"errors"
	"fmt"
)

// Class is the stable name of a verification failure. Callers switch on it, log it and
// put it in JSON; it never changes meaning between releases.
type Class string

// The failure classes. Every error that Verify, VerifyEvidence, UnmarshalBundle,
// UnmarshalShard and CheckShardSignature return is an *Error carrying one of them.
const (
	// ClassMalformed: the bytes do not decode, or a field has the wrong size or range.
	ClassMalformed Class = "malformed"
	// ClassUnsupportedKind: the TEE kind is unknown or the policy does not accept it.
	ClassUnsupportedKind Class = "unsupported_kind"
	// ClassBadSignature: a signature (report, quote, certificate, sim evidence, shard) does not verify.
	ClassBadSignature Class = "bad_signature"
	// ClassUntrustedRoot: the chain does not end in a pinned root (vendor root or sim root).
	ClassUntrustedRoot Class = "untrusted_root"
	// ClassMeasurementNotAllowed: the launch measurement (or MRTD/RTMR) is not in the allow-list.
	ClassMeasurementNotAllowed Class = "measurement_not_allowed"
	// ClassDebugEnabled: the guest runs with debugging allowed, so its memory is not private.
	ClassDebugEnabled Class = "debug_enabled"
	// ClassTCBTooLow: the platform's trusted computing base is below the policy's minimum.
	ClassTCBTooLow Class = "tcb_too_low"
	// ClassBindingMismatch: the report's user data is not the binding of this bundle's fields.
	ClassBindingMismatch Class = "binding_mismatch"
	// ClassIdentityMismatch: the bundle carries no signature, or a wrong one, by the libp2p
	// identity key its peer ID embeds. Anyone can make such a bundle naming anyone, so it
	// proves nothing about the named peer and is never slashable.
	ClassIdentityMismatch Class = "identity_mismatch"
	// ClassStale: the bundle's epoch is too old (or too far in the future) for the current epoch.
	ClassStale Class = "stale"
	// ClassSimNotAllowed: sim evidence, but the policy does not allow sim.
	ClassSimNotAllowed Class = "sim_not_allowed"
	// ClassCollateralInvalid: the endorsements or collateral (certificates, TCB info, QE
	// identity, VMPL or product expectations) are missing, expired or inconsistent.
	ClassCollateralInvalid Class = "collateral_invalid"
)

// Classes lists every class in a stable order.
var Classes = []Class{
	ClassMalformed, ClassUnsupportedKind, ClassBadSignature, ClassUntrustedRoot,
	ClassMeasurementNotAllowed, ClassDebugEnabled, ClassTCBTooLow, ClassBindingMismatch,
	ClassStale, ClassSimNotAllowed, ClassCollateralInvalid, ClassIdentityMismatch,
}

// Error is a verification failure. Class is stable; Detail is a human-readable explanation;
// Err, when set, is the underlying library error.
type Error struct {
	Class  Class
	Detail string
	Err    error
}

func (e *Error) Error() string {
	msg := string(e.Class)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error of the same class, so that
// errors.Is(err, &verify.Error{Class: verify.ClassStale}) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Class == e.Class && t.Detail == "" && t.Err == nil
}

// ClassOf returns the class of err, or "" when err is nil or not a verification error.
func ClassOf(err error) Class {
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	return ""
}

// ErrPayloadMismatch is wrapped (class bad_signature) when a shard's payload does not match
// the content ID its signed header names.
var ErrPayloadMismatch = errors.New("payload does not match the signed content ID")

func errorf(c Class, err error, format string, args ...any) *Error {
	return &Error{Class: c, Detail: fmt.Sprintf(format, args...), Err: err}
}
