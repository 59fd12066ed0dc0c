// A cast to an integer: integers are data a kernel reads (labels), never
// a value it computes.
// RUN: %expect-error tile-opt %s
func.func @f(%x: tensor<?xf32>) -> tensor<?xi32> {
  %0 = tile.cast %x : tensor<?xf32> to tensor<?xi32>
  return %0 : tensor<?xi32>
}
