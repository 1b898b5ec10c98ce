package v2

import (
	"errors"
	"fmt"
	"net/http"

	"google.golang.org/grpc/codes"
)

// Kind classifies an error for the protocol status it maps to.
type Kind int

const (
	KindInternal       Kind = iota // a fault of the server
	KindInvalidInput               // the request is malformed or does not fit the model
	KindModelNotFound              // no such model or version
	KindNotReady                   // the model (or server) exists but cannot serve yet
	KindNotImplemented             // a valid request for something this server does not do
	KindTooLarge                   // the request exceeds a configured limit
	KindUnavailable                // the server is shutting down or overloaded
	KindTimeout                    // the client did not send its request in time
)

// statusTable is the one mapping from error kinds to REST and gRPC status, as KServe's
// errors.py maps InvalidInput to 400, ModelNotFound to 404 and ModelNotReady to 503.
var statusTable = map[Kind]struct {
	http int
	grpc codes.Code
}{
	KindInternal:       {http.StatusInternalServerError, codes.Internal},
	KindInvalidInput:   {http.StatusBadRequest, codes.InvalidArgument},
	KindModelNotFound:  {http.StatusNotFound, codes.NotFound},
	KindNotReady:       {http.StatusServiceUnavailable, codes.Unavailable},
	KindNotImplemented: {http.StatusNotImplemented, codes.Unimplemented},
	KindTooLarge:       {http.StatusRequestEntityTooLarge, codes.ResourceExhausted},
	KindUnavailable:    {http.StatusServiceUnavailable, codes.Unavailable},
	KindTimeout:        {http.StatusRequestTimeout, codes.DeadlineExceeded},
}

// Error is an error with a protocol kind. Its message is what the client reads in
// {"error": "..."}, so it names the input, the expected and the actual value.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Errorf builds an Error of kind k.
func Errorf(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of err (KindInternal for errors without one).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// HTTPStatus is the REST status for err.
func HTTPStatus(err error) int { return statusTable[KindOf(err)].http }

// GRPCCode is the gRPC status code for err.
func GRPCCode(err error) codes.Code { return statusTable[KindOf(err)].grpc }

// ErrorBody is the V2 error response body.
type ErrorBody struct {
	Error string `json:"error"`
}
