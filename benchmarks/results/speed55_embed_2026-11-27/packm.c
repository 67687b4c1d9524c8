// Does MKL's packed layout, and with it the products' results, depend on the max rows a matrix
// was packed for? Each shape of the recurrence packed for m rows, its products of 1..m rows
// compared bit for bit with those of the pack for 64 rows; prints the m whose results differ.
//   L=.venv/lib/python3.11/site-packages/paddle/libs; gcc -O2 packm.c -o packm -L$L -l:libmklml_intel.so -l:libiomp5.so
//   LD_LIBRARY_PATH=$L MKL_DEBUG_CPU_TYPE=5 OMP_NUM_THREADS=1 ./packm   (and 2 threads)
// AMD EPYC AVX-512 VM, 2026-11-27: 1 thread m = 1, 3, 5, 6, 7 differ (2, 4, 8-300 do not);
// 2 threads m = 1 (and 2, 128-300 for the small size's shapes).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
enum {RowMajor=101, NoTrans=111, Trans=112, AMat=161, BMat=162, Packed=151};
float* cblas_sgemm_alloc(int id, int m, int n, int k);
size_t cblas_sgemm_pack_get_size(int id, int m, int n, int k);
void cblas_sgemm_pack(int layout, int id, int trans, int m, int n, int k, float alpha, const float* src, int ld, float* dest);
void cblas_sgemm_compute(int layout, int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void cblas_sgemm_free(float*);
void run(int k, int n, int trans) {
  float* B = malloc(sizeof(float)*k*n); for (long i=0;i<(long)k*n;i++) B[i]=(float)((i*7919)%1000)/1000.f-0.5f;
  float* A = malloc(sizeof(float)*300*k); for (int i=0;i<300*k;i++) A[i]=(float)((i*31)%997)/997.f-0.5f;
  float* ref = cblas_sgemm_alloc(BMat, 64, n, k);
  cblas_sgemm_pack(RowMajor, BMat, trans?Trans:NoTrans, 64, n, k, 1.f, B, trans?k:n, ref);
  float* C0 = malloc(sizeof(float)*300*n); float* C1 = malloc(sizeof(float)*300*n);
  printf("k %d n %d trans %d: pack m differing from m=64 (rows 1..m):", k, n, trans);
  int ms[] = {1,2,3,4,5,6,7,8,9,12,15,16,17,20,24,31,32,33,48,63,65,100,128,256,300};
  for (int mi=0; mi<sizeof ms/sizeof *ms; mi++) { int m = ms[mi];
    float* p = cblas_sgemm_alloc(BMat, m, n, k);
    cblas_sgemm_pack(RowMajor, BMat, trans?Trans:NoTrans, m, n, k, 1.f, B, trans?k:n, p);
    int bad = 0;
    for (int rows=1; rows<=m; rows++) {
      cblas_sgemm_compute(RowMajor, NoTrans, Packed, rows, n, k, A, k, ref, n, 0.f, C0, n);
      cblas_sgemm_compute(RowMajor, NoTrans, Packed, rows, n, k, A, k, p, n, 0.f, C1, n);
      if (memcmp(C0, C1, sizeof(float)*rows*n)) { bad = rows; break; }
    }
    if (bad) printf(" m%d(first rows %d)", m, bad);
    cblas_sgemm_free(p);
  }
  printf("\n"); cblas_sgemm_free(ref); free(A); free(B); free(C0); free(C1);
}
int main(){ run(512, 16384, 0); run(4096, 512, 0); run(128, 4096, 0); run(1024, 128, 0); run(16384, 512, 1); run(512, 4096, 1); }
