// c-ares (Debian's libc-ares-dev): the asynchronous resolver behind the proxy's names. Only the DNS
// target imports it.
#include <ares.h>
