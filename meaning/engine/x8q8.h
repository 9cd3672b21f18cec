/* agentdir's matmul kernel for the e5.c engine (included by our patch), over the weights
 * interleaved by unpack_q4 (groups of RO rows), included once per instruction set
 * with KERNEL_NAME, KERNEL_TARGET (a function attribute), KERNEL_DOT(acc, w, x) (adds to each
 * int32 lane of acc the dot of four unsigned weights and four signed activations), KERNEL_TOKENS
 * (tokens that share each load of a weight chunk) and KERNEL_CHAINS (accumulators per token, so
 * that the dots of one block need not wait on each other). */
#define KERNEL_CAT_(a, b) a##b
#define KERNEL_CAT(a, b) KERNEL_CAT_(a, b)
#define KERNEL_STEP KERNEL_CAT(KERNEL_NAME, _tokens)

/* NT tokens from t0 against one group of eight rows. */
KERNEL_TARGET static inline __attribute__((always_inline)) void KERNEL_STEP(
    const int NT, const int8_t *wg, const float *dw, const float *bias, const int8_t *aq,
    const float *ad, const int32_t *as, float *Y, int t0, int oo, int ro, int nout, int nin) {
    int nb = nin / QK;
    const __m256i ones = _mm256_set1_epi16(1);
    (void)ones;
    const int32_t *a[KERNEL_TOKENS];
    __m256 acc[KERNEL_TOKENS], corr[KERNEL_TOKENS];
    for (int i = 0; i < NT; i++) {
        a[i] = (const int32_t *)(aq + (size_t)(t0 + i) * nin);
        acc[i] = _mm256_setzero_ps(); corr[i] = _mm256_setzero_ps();
    }
    for (int b = 0; b < nb; b++) {
        __m256i p[KERNEL_TOKENS][KERNEL_CHAINS];
        for (int i = 0; i < NT; i++)
            for (int c = 0; c < KERNEL_CHAINS; c++) p[i][c] = _mm256_setzero_si256();
        const __m256i *w = (const __m256i *)(wg + (size_t)b * QK * RO);
        for (int k = 0; k < QK / 4; k++) {
            __m256i wv = _mm256_load_si256(w + k);
            for (int i = 0; i < NT; i++)
                p[i][k % KERNEL_CHAINS] =
                    KERNEL_DOT(p[i][k % KERNEL_CHAINS], wv, _mm256_set1_epi32(a[i][b * (QK / 4) + k]));
        }
        __m256 ws = _mm256_loadu_ps(dw + (size_t)b * RO);
        for (int i = 0; i < NT; i++) {
            __m256i sum = p[i][0];
            for (int c = 1; c < KERNEL_CHAINS; c++) sum = _mm256_add_epi32(sum, p[i][c]);
            float da = ad[(size_t)(t0 + i) * nb + b], sa = (float)as[(size_t)(t0 + i) * nb + b];
            acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(ws, _mm256_set1_ps(da)), acc[i]);
            corr[i] = _mm256_fmadd_ps(ws, _mm256_set1_ps(da * sa), corr[i]);
        }
    }
    for (int i = 0; i < NT; i++) {
        float o[RO];
        _mm256_storeu_ps(o, _mm256_fnmadd_ps(_mm256_set1_ps(8.f), corr[i], acc[i]));
        for (int r = 0; r < ro; r++) Y[(size_t)(t0 + i) * nout + oo + r] = (bias ? bias[oo + r] : 0.f) + o[r];
    }
}

KERNEL_TARGET static void KERNEL_NAME(const int8_t *WX, const float *WD, const float *bias,
                                      const int8_t *aq, const float *ad, const int32_t *as,
                                      float *Y, int L, int nout, int nin) {
    int nb = nin / QK;
    for (int oo = 0; oo < nout; oo += RO) {
        int ro = nout - oo < RO ? nout - oo : RO;
        const int8_t *wg = WX + (size_t)oo * nin;
        const float *dw = WD + (size_t)oo * nb;
        int t = 0;
        for (; t + KERNEL_TOKENS <= L; t += KERNEL_TOKENS)
            KERNEL_STEP(KERNEL_TOKENS, wg, dw, bias, aq, ad, as, Y, t, oo, ro, nout, nin);
        for (; t < L; t++) KERNEL_STEP(1, wg, dw, bias, aq, ad, as, Y, t, oo, ro, nout, nin);
    }
}
#undef KERNEL_STEP
#undef KERNEL_CAT
#undef KERNEL_CAT_
#undef KERNEL_NAME
#undef KERNEL_TARGET
#undef KERNEL_DOT
#undef KERNEL_TOKENS
#undef KERNEL_CHAINS
