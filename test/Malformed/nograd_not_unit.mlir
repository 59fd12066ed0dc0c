// RUN: %expect-error tile-opt %s
func.func @f(%x: f32 {tile.nograd = 1.0 : f32}) -> f32 {
  return %x : f32
}
