#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
extern "C" {
float* cblas_sgemm_alloc(int identifier, int m, int n, int k);
void cblas_sgemm_pack(int layout, int identifier, int trans, int m, int n, int k, float alpha, const float* src, int ld, float* dest);
void cblas_sgemm_compute(int layout, int transa, int transb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void MKL_Set_Num_Threads(int);
int MKL_Set_Num_Threads_Local(int);
}
struct Dir {
  int D, P, m; float *wh, *wp, *h, *mm, *rec, *out;
  Dir(int D_, int P_, int m_) : D(D_), P(P_), m(m_) {
    std::vector<float> a((size_t)P * 4 * D, 0.01f), b((size_t)D * P, 0.01f);
    wh = cblas_sgemm_alloc(162, m, 4 * D, P); cblas_sgemm_pack(101, 162, 111, m, 4 * D, P, 1.f, a.data(), 4 * D, wh);
    wp = cblas_sgemm_alloc(162, m, P, D); cblas_sgemm_pack(101, 162, 111, m, P, D, 1.f, b.data(), P, wp);
    h = new float[m * P](); mm = new float[m * D](); rec = new float[m * 4 * D]; out = new float[m * P];
    for (int i = 0; i < m * P; ++i) h[i] = 0.1f; for (int i = 0; i < m * D; ++i) mm[i] = 0.1f;
  }
  void steps(int T, int rows) {
    for (int t = 0; t < T; ++t) {
      cblas_sgemm_compute(101, 111, 151, rows, 4 * D, P, h, P, wh, 4 * D, 0.f, rec, 4 * D);
      cblas_sgemm_compute(101, 111, 151, rows, P, D, mm, D, wp, P, 0.f, out, P);
    }
  }
};
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main(int argc, char** argv) {
  int D = atoi(argv[1]), P = atoi(argv[2]), m = atoi(argv[3]), T = atoi(argv[4]);
  Dir f(D, P, m), b(D, P, m);
  double flops = 2.0 * 2 * T * m * ((double)P * 4 * D + (double)D * P);
  for (int rep = 0; rep < 3; ++rep) {
    MKL_Set_Num_Threads(2);
    double t0 = now(); f.steps(T, m); b.steps(T, m); double seq = now() - t0;
    t0 = now();
    std::thread tf([&] { MKL_Set_Num_Threads_Local(1); f.steps(T, m); });
    std::thread tb([&] { MKL_Set_Num_Threads_Local(1); b.steps(T, m); });
    tf.join(); tb.join(); double par = now() - t0;
    printf("D=%d P=%d m=%d: 2 threads sequential %.2f ms (%.0f GF/s), concurrent 1+1 %.2f ms (%.0f GF/s)\n", D, P, m,
           seq * 1e3, flops / seq / 1e9, par * 1e3, flops / par / 1e9);
  }
}
