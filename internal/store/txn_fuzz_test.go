package store

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		txn   Txn
		field string // "" when valid
	}{
		{"empty txn", Txn{}, ""},
		{"put and delete", Txn{If: []Cond{Absent("/a"), ModRevIs("/b", 3)}, Then: []Op{PutOp("/a", []byte("x")), DeleteOp("/b")}}, ""},
		{"max key", Txn{Then: []Op{PutOp(strings.Repeat("k", MaxKeyLen), nil)}}, ""},
		{"max value", Txn{Then: []Op{PutOp("/v", make([]byte, MaxValueLen))}}, ""},
		{"empty key", Txn{Then: []Op{PutOp("/ok", nil), PutOp("", nil)}}, "then[1].key"},
		{"long key", Txn{Then: []Op{PutOp(strings.Repeat("k", MaxKeyLen+1), nil)}}, "then[0].key"},
		{"bad utf8", Txn{Then: []Op{DeleteOp("/\xc3\x28")}}, "then[0].key"},
		{"big value", Txn{Then: []Op{PutOp("/v", make([]byte, MaxValueLen+1))}}, "then[0].value"},
		{"delete with value", Txn{Then: []Op{{Type: Delete, Key: "/d", Value: []byte("x")}}}, "then[0].value"},
		{"unknown type", Txn{Then: []Op{{Type: 9, Key: "/u"}}}, "then[0].type"},
		{"duplicate", Txn{Then: []Op{PutOp("/d", nil), DeleteOp("/e"), PutOp("/d", nil)}}, "then[2].key"},
		{"cond key", Txn{If: []Cond{Absent("/a"), Absent("")}}, "if[1].key"},
		{"cond rev", Txn{If: []Cond{ModRevIs("/a", -2)}}, "if[0].mod_rev"},
		{"too many ops", Txn{Then: make([]Op, MaxTxnOps+1)}, "then"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.txn.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err %v, want *InvalidError", err)
			}
			if ie.Field != tc.field {
				t.Fatalf("field %q, want %q (%v)", ie.Field, tc.field, err)
			}
		})
	}
}

// FuzzTxnValidate builds a Txn from fuzzed keys, values and revisions and
// checks that Validate never panics, that every error is an *InvalidError
// naming a field, and that accepted input obeys the limits.
func FuzzTxnValidate(f *testing.F) {
	f.Add("/jobs/a", []byte("{}"), int64(0), uint8(1), "/jobs/b")
	f.Add("", []byte(nil), int64(-1), uint8(2), "")
	f.Add("/\xff", []byte("x"), int64(5), uint8(0), "/\xff")
	f.Add("/same", []byte("x"), int64(1), uint8(1), "/same")
	f.Add(strings.Repeat("k", MaxKeyLen+1), []byte("x"), int64(1), uint8(1), "/k")
	f.Fuzz(func(t *testing.T, key string, value []byte, rev int64, typ uint8, key2 string) {
		txn := Txn{
			If:   []Cond{{Key: key2, ModRev: rev}},
			Then: []Op{{Type: OpType(typ), Key: key, Value: value}, DeleteOp(key2)},
		}
		err := txn.Validate()
		if err != nil {
			var ie *InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not an *InvalidError", err)
			}
			if ie.Field == "" || !strings.Contains(err.Error(), ie.Field) {
				t.Fatalf("error %q does not name its field", err)
			}
			return
		}
		for _, k := range []string{key, key2} {
			if ValidateKey("k", k) != nil {
				t.Fatalf("accepted bad key %q", k)
			}
		}
		if key == key2 || rev < 0 || len(value) > MaxValueLen || (OpType(typ) != Put && OpType(typ) != Delete) {
			t.Fatalf("accepted %+v", txn)
		}
	})
}
