// Writes a 2-D float32 array in NumPy's .npy format (version 1.0), so numpy.load reads posenc's tables.
#pragma once

#include <cstdint>

namespace cli {

// rows x cols floats, row-major; false when the file cannot be written.
bool write_npy(const char *path, const float *data, int64_t rows, int64_t cols);

}  // namespace cli
