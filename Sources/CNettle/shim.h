#pragma once
// Nettle's PBKDF2 (pbkdf2_hmac_sha1, pbkdf2_hmac_sha256): the only part of nettle AssetPackCrypto
// uses. OpenSSL 3.0's PKCS5_PBKDF2_HMAC copies three digest contexts through its provider layer on
// every iteration and costs ~3x nettle's (docs/ARCHITECTURE.md, "Crypto").
#include <nettle/pbkdf2.h>
