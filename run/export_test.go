package run

// EncodePlain is appendPlainOutput for tests: the bytes and whether the
// reflection-free encoder wrote o.
func EncodePlain(o *Output) ([]byte, bool) { return appendPlainOutput(nil, o) }

// EncodeReflect is the encoding/json path of MarshalJSON.
func EncodeReflect(o *Output) ([]byte, error) { return o.marshalReflect() }
