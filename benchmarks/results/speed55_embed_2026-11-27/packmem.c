// Where a kept MKL pack lives, and the speed of the recurrence's products on it: W_hidden of the
// original size [512, 16384] packed for 64 rows, 20 steps of cblas_sgemm_compute ([64, 512] x it),
// best of 5, five rounds, on MKL's allocation, 4 KB pages, MKL_malloc, and 2 MB pages (madvise).
//   L=.venv/lib/python3.11/site-packages/paddle/libs; gcc -O2 packmem.c -o packmem -L$L -l:libmklml_intel.so -l:libiomp5.so
//   LD_LIBRARY_PATH=$L MKL_DEBUG_CPU_TYPE=5 OMP_NUM_THREADS=1 taskset -c 1 ./packmem
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
enum {RowMajor=101, NoTrans=111, Trans=112, AMat=161, BMat=162, Packed=151};
float* cblas_sgemm_alloc(int id, int m, int n, int k);
size_t cblas_sgemm_pack_get_size(int id, int m, int n, int k);
void cblas_sgemm_pack(int layout, int id, int trans, int m, int n, int k, float alpha, const float* src, int ld, float* dest);
void cblas_sgemm_compute(int layout, int ta, int tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc);
void cblas_sgemm_free(float*); void* MKL_malloc(size_t, int);
double now(){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  int k=512, n=16384, m=64;
  float* B = malloc(sizeof(float)*k*n); for (long i=0;i<(long)k*n;i++) B[i]=(float)((i*7919)%1000)/1000.f-0.5f;
  float* A = malloc(sizeof(float)*m*k); for (int i=0;i<m*k;i++) A[i]=(float)((i*31)%997)/997.f-0.5f;
  float* C = malloc(sizeof(float)*m*n);
  size_t bytes = cblas_sgemm_pack_get_size(BMat, m, n, k);
  float* p[4];
  p[0] = cblas_sgemm_alloc(BMat, m, n, k);
  p[1] = aligned_alloc(4096, (bytes+4095)/4096*4096);
  p[2] = MKL_malloc(bytes + 64, 64);
  p[3] = aligned_alloc(2<<20, (bytes+(2<<20)-1)/(2<<20)*(2<<20)); madvise(p[3], (bytes+(2<<20)-1)/(2<<20)*(2<<20), MADV_HUGEPAGE);
  const char* names[4] = {"mkl alloc", "aligned 4K", "MKL_malloc 64", "2M + MADV_HUGEPAGE"};
  for (int i=0;i<4;i++) cblas_sgemm_pack(RowMajor, BMat, NoTrans, m, n, k, 1.f, B, n, p[i]);
  printf("mkl alloc %% 4096 = %lu, %% 2M = %lu\n", (unsigned long)p[0] % 4096, (unsigned long)p[0] % (2<<20));
  for (int rep=0; rep<5; rep++) for (int i=0;i<4;i++){
    double best=1e9;
    for (int r=0;r<5;r++){ double s=now(); for (int step=0; step<20; step++) cblas_sgemm_compute(RowMajor, NoTrans, Packed, m, n, k, A, k, p[i], n, 0.f, C, n); double e=now()-s; if(e<best)best=e;}
    printf("%-20s 20 steps best %.1f ms\n", names[i], best*1000);
  }
  FILE* f = fopen("/proc/self/smaps_rollup","r"); char line[256]; while (fgets(line,256,f)) if (strstr(line,"AnonHuge")) fputs(line, stdout);
}
