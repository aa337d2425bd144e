// CPU reference MXFP8 quantizer over dense and boxed tensors (element math in
// mxfp8.h).
#include "reshard/core/mxfp8.h"

#include "reshard/core/error.h"

namespace reshard {

Dims mxfp8_scale_shape(const Dims &shape) {
  Dims s = shape;
  if (s.n > 0)
    s[s.n - 1] /= kMxBlock;
  return s;
}

void mxfp8_quantize_into(const uint16_t *bf16, const Dims &extent,
                         uint8_t *values, uint8_t *scales,
                         const Dims &storage_shape, const Dims &offset) {
  const int n = extent.n;
  if (n == 0 || extent[n - 1] % kMxBlock != 0 ||
      offset[n - 1] % kMxBlock != 0 || storage_shape[n - 1] % kMxBlock != 0)
    throw config_error("mxfp8: the last dim must be a multiple of " +
                       std::to_string(kMxBlock) + " (extent " + extent.str() +
                       ", offset " + offset.str() + ", storage " +
                       storage_shape.str() + ")");
  if (extent.product() == 0)
    return;
  const Dims scale_shape = mxfp8_scale_shape(storage_shape);
  const int64_t k = extent[n - 1], rows = extent.product() / k;
  Dims idx = Dims::zeros(n), at = offset, at_scale = offset;
  at_scale[n - 1] /= kMxBlock;
  for (int64_t r = 0; r < rows; ++r) {
    for (int d = 0; d < n - 1; ++d)
      at[d] = at_scale[d] = offset[d] + idx[d];
    uint8_t *v = values + linear_index(at, storage_shape);
    uint8_t *s = scales + linear_index(at_scale, scale_shape);
    const uint16_t *in = bf16 + r * k;
    for (int64_t b = 0; b < k / kMxBlock; ++b)
      s[b] =
          mxfp8_quantize_block(in + b * kMxBlock, kMxBlock, v + b * kMxBlock);
    for (int d = n - 2; d >= 0 && ++idx[d] == extent[d]; --d)
      idx[d] = 0;
  }
}

void mxfp8_quantize(const uint16_t *bf16, const Dims &extent, uint8_t *values,
                    uint8_t *scales) {
  mxfp8_quantize_into(bf16, extent, values, scales, extent,
                      Dims::zeros(extent.n));
}

} // namespace reshard
