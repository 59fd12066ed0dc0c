// RUN: %expect-error tile-opt %s
func.func @f(%x: f32) -> f32 {
  return %y : f32
}
