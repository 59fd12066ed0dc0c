// RMSNorm over the last dimension:
//   y = x * rsqrt(mean(x^2) + eps) * (w + offset)
// offset is 0 for Llama-style weights and 1 for Gemma-style ones. eps and
// offset are parameters, not differentiated.
func.func @rms_norm(%x: tensor<?x?xbf16>, %w: tensor<?xbf16>,
                    %eps: f32 {tile.nograd}, %offset: f32 {tile.nograd})
    -> tensor<?x?xbf16> attributes {tile.kernel} {
  %xf = tile.cast %x : tensor<?x?xbf16> to tensor<?x?xf32>
  %sq = arith.mulf %xf, %xf : tensor<?x?xf32>
  %ms = tile.reduce mean %sq [1] : tensor<?x?xf32> -> tensor<?xf32>
  %epsv = tile.splat %eps like %ms : f32, tensor<?xf32> -> tensor<?xf32>
  %var = arith.addf %ms, %epsv : tensor<?xf32>
  %rstd = math.rsqrt %var : tensor<?xf32>
  %rb = tile.broadcast %rstd [1] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %xhat = arith.mulf %xf, %rb : tensor<?x?xf32>
  %wf = tile.cast %w : tensor<?xbf16> to tensor<?xf32>
  %offv = tile.splat %offset like %wf : f32, tensor<?xf32> -> tensor<?xf32>
  %wo = arith.addf %wf, %offv : tensor<?xf32>
  %wb = tile.broadcast %wo [0] like %xf
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %y = arith.mulf %xhat, %wb : tensor<?x?xf32>
  %yb = tile.cast %y : tensor<?x?xf32> to tensor<?x?xbf16>
  return %yb : tensor<?x?xbf16>
}
