// Cross-entropy of each row of logits against an integer label, with
// PyTorch's options (F.cross_entropy) and PaLM's z-loss;
// tile.ops.cross_entropy runs it and reduces the rows.
//
//   lse  = max + log(sum(exp(x - max)))
//   loss = lse - (1 - eps) * x[label] - eps * mean(x) + z * lse^2
//          per row, 0 where label == ignore
//
// eps is label smoothing (the target mixes in the uniform distribution), z
// the z-loss weight. Labels are i64 data, read through tile.cast; the
// label's logit is picked with tile.iota, arith.cmpf and arith.select, so
// the gradient, softmax minus the (smoothed) one-hot, is derived by the
// ordinary rules, never written by hand. The maximum only shifts the
// exponentials (lse does not depend on it): tile.stop_gradient says so, and
// the backward is one pass over the row, with no reduction.
//
// Soft-capping (Gemma 2) is examples/softcap.mlir, run first: in this
// kernel, behind a select on a parameter, it cost every call a branch per
// column group, the backward a third of its speed (docs/Performance.md).
func.func @cross_entropy(%logits: tensor<?x?xbf16>, %labels: tensor<?xi64>,
                         %ignore: f32 {tile.nograd}, %eps: f32 {tile.nograd},
                         %z: f32 {tile.nograd})
    -> tensor<?xf32> attributes {tile.kernel} {
  %x = tile.cast %logits : tensor<?x?xbf16> to tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %max = tile.reduce max %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %m = tile.stop_gradient %max : tensor<?xf32>
  %mb = tile.broadcast %m [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %shifted = arith.subf %x, %mb : tensor<?x?xf32>
  %e = math.exp %shifted : tensor<?x?xf32>
  %s = tile.reduce sum %e [1] : tensor<?x?xf32> -> tensor<?xf32>
  %logs = math.log %s : tensor<?xf32>
  %lse = arith.addf %logs, %m : tensor<?xf32>
  %label = tile.cast %labels : tensor<?xi64> to tensor<?xf32>
  %lb = tile.broadcast %label [1] like %x
      : tensor<?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %column = tile.iota like %x : tensor<?x?xf32> -> tensor<?x?xf32>
  %hit = arith.cmpf oeq, %column, %lb : tensor<?x?xf32>
  %zeros = tile.splat %zero like %x : f32, tensor<?x?xf32> -> tensor<?x?xf32>
  %picked = arith.select %hit, %x, %zeros : tensor<?x?xi1>, tensor<?x?xf32>
  %target = tile.reduce sum %picked [1] : tensor<?x?xf32> -> tensor<?xf32>
  %mean = tile.reduce mean %x [1] : tensor<?x?xf32> -> tensor<?xf32>
  %keep = arith.subf %one, %eps : f32
  %keepv = tile.splat %keep like %lse : f32, tensor<?xf32> -> tensor<?xf32>
  %epsv = tile.splat %eps like %lse : f32, tensor<?xf32> -> tensor<?xf32>
  %zv = tile.splat %z like %lse : f32, tensor<?xf32> -> tensor<?xf32>
  %rowzeros = tile.splat %zero like %lse : f32, tensor<?xf32> -> tensor<?xf32>
  %t1 = arith.mulf %keepv, %target : tensor<?xf32>
  // Without smoothing the mean is not added at all: a row with a masked
  // (-inf) logit has a -inf mean, and 0 * -inf would make its loss NaN.
  %smoothing = arith.cmpf one, %eps, %zero : f32
  %scaledmean = arith.mulf %epsv, %mean : tensor<?xf32>
  %t2 = arith.select %smoothing, %scaledmean, %rowzeros : tensor<?xf32>
  %nll = arith.subf %lse, %t1 : tensor<?xf32>
  %smoothed = arith.subf %nll, %t2 : tensor<?xf32>
  %lse2 = arith.mulf %lse, %lse : tensor<?xf32>
  %zl = arith.mulf %zv, %lse2 : tensor<?xf32>
  %loss = arith.addf %smoothed, %zl : tensor<?xf32>
  %ignorev = tile.splat %ignore like %lse : f32, tensor<?xf32> -> tensor<?xf32>
  %valid = arith.cmpf une, %label, %ignorev : tensor<?xf32>
  %out = arith.select %valid, %loss, %rowzeros : tensor<?xi1>, tensor<?xf32>
  return %out : tensor<?xf32>
}
