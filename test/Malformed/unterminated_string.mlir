// RUN: %expect-error tile-opt %s
func.func @f(%x: f32) -> f32 attributes {tile.note = "never closed} {
  return %x : f32
}
