package p2p

import "errors"

// Errors callers may test for with errors.Is.
var (
	// ErrMessageTooLarge: Publish was given more than MaxMessageSize bytes.
	ErrMessageTooLarge = errors.New("message larger than the gossip cap")
	// ErrUnknownTopic: the kind is not among the topics this host joined.
	ErrUnknownTopic = errors.New("topic not joined")
	// ErrRequestTooLarge: a stream request exceeded the handler's cap.
	ErrRequestTooLarge = errors.New("request larger than the cap")
	// ErrResponseTooLarge: a stream response exceeded the caller's cap.
	ErrResponseTooLarge = errors.New("response larger than the cap")
	// ErrNoValidator: a joined topic kind was given no validator.
	ErrNoValidator = errors.New("no validator")
	// ErrClosed: the host was closed.
	ErrClosed = errors.New("host closed")
)
