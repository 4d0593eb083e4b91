// suanli.h compiles as C++17 with -Wall -Wextra -Werror, and its calls link.
#include "suanli.h"

unsigned header_compiles_as_cpp() { return suanli_api_version(); }
