// Package lossless owns reading JSON objects into Go structs without losing
// what the struct does not model: members it has no field for, members whose
// value its field cannot hold, and the stored form of members it leaves empty.
// Writing the struct back restores them, so data written by another program
// (Agno's Python writers) survives being read and re-saved by Agentry. It
// also owns decoding JSON into interface values with numbers kept as written
// (UnmarshalNumbers), so large integers are not rounded on the way.
package lossless
