#ifndef ATSGATE_CZLIB_SHIM_H
#define ATSGATE_CZLIB_SHIM_H
#include <zlib.h>

/* inflateInit2 is a macro (it passes the library's version and the stream's size), which Swift
   cannot import. */
static inline int atsgate_inflateInit2(z_streamp stream, int windowBits) {
    return inflateInit2(stream, windowBits);
}

#endif
