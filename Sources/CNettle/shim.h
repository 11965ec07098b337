#pragma once
// Nettle's PBKDF2 (pbkdf2_hmac_sha1, pbkdf2_hmac_sha256): the only part of nettle AssetPackCrypto
// uses. OpenSSL 3.0's PKCS5_PBKDF2_HMAC copies three digest contexts through its provider layer on
// every iteration: 1.9-2.3 ms for WinZip AES's derivation against nettle's 0.67-0.71 ms
// (docs/ARCHITECTURE.md, "PBKDF2 from nettle").
#include <nettle/pbkdf2.h>
