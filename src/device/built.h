/* Whether this build of the library has the device layer: the one place outside the device layer's own
 * sources that reads the build's configuration (CMake defines RMAOP_HAVE_CUDA for the library when it finds
 * CUDA). The core and the operators test it at run time only through RMAOP__ON_DEVICE (src/core/ctx.h), a
 * constant 0 without CUDA, and call the device layer's functions unconditionally behind that test: a build
 * without CUDA links src/device/stubs.c, whose functions refuse (RMAOP_ERR_UNSUPPORTED) or do nothing. */
#ifndef RMAOP_DEVICE_BUILT_H
#define RMAOP_DEVICE_BUILT_H

#ifdef RMAOP_HAVE_CUDA
#define RMAOP__DEV_BUILT 1
#else
#define RMAOP__DEV_BUILT 0
#endif

#endif /* RMAOP_DEVICE_BUILT_H */
