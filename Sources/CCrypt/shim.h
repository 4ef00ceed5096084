// The system's libcrypt (libxcrypt): bcrypt and SHA-512 crypt for --auth-file.
#include <crypt.h>
