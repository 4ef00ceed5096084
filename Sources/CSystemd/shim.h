#ifndef ATSGATE_CSYSTEMD_SHIM_H
#define ATSGATE_CSYSTEMD_SHIM_H
/* Without this, sd-journal.h turns sd_journal_sendv into a macro adding CODE_FILE/CODE_LINE of the
   C call site, which from Swift would always name this header; Swift cannot call the macro anyway. */
#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#endif
