#include <zip.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  /* argv: out.zip method(128|192|256|0) names... */
  int err; zip_t *za = zip_open(argv[1], ZIP_CREATE | ZIP_TRUNCATE, &err);
  int bits = atoi(argv[2]);
  int em = bits == 1 ? ZIP_EM_TRAD_PKWARE : bits == 128 ? ZIP_EM_AES_128 : bits == 192 ? ZIP_EM_AES_192 : bits == 256 ? ZIP_EM_AES_256 : ZIP_EM_NONE;
  for (int i = 3; i < argc; i++) {
    zip_source_t *s = zip_source_file(za, argv[i], 0, -1);
    zip_int64_t idx = zip_file_add(za, argv[i], s, 0);
    zip_set_file_compression(za, idx, argv[i][0] == 'r' ? ZIP_CM_STORE : ZIP_CM_DEFLATE, 0);
    if (bits != 1) zip_file_set_mtime(za, idx, 1700000000, 0); /* libzip 1.7.3 writes a wrong ZipCrypto check byte after set_mtime */
    if (em != ZIP_EM_NONE && zip_file_set_encryption(za, idx, em, "vector password") != 0) { fprintf(stderr, "enc\n"); return 1; }
  }
  if (zip_close(za) != 0) { fprintf(stderr, "%s\n", zip_strerror(za)); return 1; }
  return 0;
}
