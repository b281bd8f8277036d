package jobdir

import (
	"encoding/json"
	"testing"
)

// TestCtlRequest_Wire: the control socket's requests keep their wire
// form, which a supervisor started by an older runbox still speaks.
func TestCtlRequest_Wire(t *testing.T) {
	tests := []struct {
		req  CtlRequest
		want string
	}{
		{CtlRequest{Op: OpWrite, Data: []byte("hi\n")}, `{"op":"write","data":"aGkK"}`},
		{CtlRequest{Op: OpClose}, `{"op":"close"}`},
		{CtlRequest{Op: OpWait}, `{"op":"wait"}`},
		{CtlRequest{Op: OpResize, Rows: 24, Cols: 80}, `{"op":"resize","rows":24,"cols":80}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("Marshal(%+v) = %s; want %s", tt.req, b, tt.want)
		}
		var back CtlRequest
		if err := json.Unmarshal(b, &back); err != nil || back.Op != tt.req.Op || string(back.Data) != string(tt.req.Data) || back.Rows != tt.req.Rows || back.Cols != tt.req.Cols {
			t.Errorf("Unmarshal(%s) = %+v, %v; want %+v", b, back, err, tt.req)
		}
	}
}
