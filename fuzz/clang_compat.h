/* Included first into every source of the library in the fuzz build (fuzz/CMakeLists.txt, -include): glibc's
 * <complex.h> defines CMPLX only for GCC >= 4.7, and clang says it is GCC 4.2. The macro as glibc spells it. */
#ifndef RMAOP_FUZZ_CLANG_COMPAT_H
#define RMAOP_FUZZ_CLANG_COMPAT_H
#include <complex.h>
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#ifndef CMPLXF
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif
#endif
