/*
 * SHA-256 (FIPS 180-4), the shuffler's commitment hash, and the commitment itself (spec:
 * shuffler.md, shuffle_complete). Written for this project from the standard; tested
 * against its examples ("abc", the 448-bit message, one million 'a') in
 * tests/test_vectors.c. No heap, no tables beyond the 64 round constants.
 */
#include <string.h>

#include "tabled_device.h"

static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void block(td_sha256 *s, const uint8_t *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ROTR(w[i - 15], 7) ^ ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROTR(w[i - 2], 17) ^ ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = s->h[0]; b = s->h[1]; c = s->h[2]; d = s->h[3];
    e = s->h[4]; f = s->h[5]; g = s->h[6]; h = s->h[7];
    for (i = 0; i < 64; i++) {
        t1 = h + (ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        t2 = (ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    s->h[0] += a; s->h[1] += b; s->h[2] += c; s->h[3] += d;
    s->h[4] += e; s->h[5] += f; s->h[6] += g; s->h[7] += h;
}

void td_sha256_init(td_sha256 *s)
{
    static const uint32_t H0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                   0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(s->h, H0, sizeof H0);
    s->bytes = 0;
    s->used = 0;
}

void td_sha256_update(td_sha256 *s, const uint8_t *data, size_t len)
{
    s->bytes += len;
    while (len > 0) {
        size_t take = 64 - s->used < len ? 64 - s->used : len;
        memcpy(s->buf + s->used, data, take);
        s->used += take;
        data += take;
        len -= take;
        if (s->used == 64) {
            block(s, s->buf);
            s->used = 0;
        }
    }
}

void td_sha256_final(td_sha256 *s, uint8_t out[32])
{
    uint64_t bits = s->bytes * 8u;
    uint8_t pad[72];
    size_t n = (s->used < 56 ? 56 : 120) - s->used, i;
    memset(pad, 0, sizeof pad);
    pad[0] = 0x80;
    for (i = 0; i < 8; i++)
        pad[n + i] = (uint8_t)(bits >> (56 - 8 * i));
    td_sha256_update(s, pad, n + 8);
    for (i = 0; i < 32; i++)
        out[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

void td_commitment(uint8_t version, uint32_t shuffle_id, uint8_t decks, const uint8_t nonce[16],
                   const char (*cards)[2], uint16_t total, uint8_t out[32])
{
    td_sha256 s;
    uint8_t head[7];
    uint16_t i;
    head[0] = (uint8_t)(shuffle_id >> 24);
    head[1] = (uint8_t)(shuffle_id >> 16);
    head[2] = (uint8_t)(shuffle_id >> 8);
    head[3] = (uint8_t)shuffle_id;
    head[4] = decks;
    head[5] = (uint8_t)(total >> 8);
    head[6] = (uint8_t)total;
    td_sha256_init(&s);
    /* Version 3 binds the shoe certified: decks and total after the id (spec). */
    td_sha256_update(&s, head, version >= TD_COMMITMENT_V3_FROM ? 7u : 4u);
    td_sha256_update(&s, nonce, 16);
    for (i = 0; i < total; i++)
        td_sha256_update(&s, (const uint8_t *)cards[i], 2);
    td_sha256_final(&s, out);
}
