package foresttest

import "github.com/gangboost/gangboost/runtime/internal/npy"

// Array and ReadNpy are runtime/internal/npy's, which the runtime binary's zoo test shares.
type Array = npy.Array

// ReadNpy reads a NumPy .npy file (npy.Read).
func ReadNpy(path string) (*Array, error) { return npy.Read(path) }
