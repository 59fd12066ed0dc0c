// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?x