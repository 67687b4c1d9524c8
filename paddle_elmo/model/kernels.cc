// CPU kernels for what Paddle runs op by op, each op with its own single-threaded overhead, or
// with slow scalar math: the LSTM recurrence (dozens of ops per step forward and backward; here a step
// is two Paddle matmuls and one vectorised pass over the gates), the char CNN (as Paddle ops an
// embedding lookup, a product and a maximum per window position for each width; here one call), the
// highway gating, the sampled-softmax cross-entropy and the softmax's row copies (Paddle's gather
// runs on one thread). Built and
// wrapped by kernels.py, which also holds the Paddle-op versions; large loops run on the OpenMP
// threads of Paddle's libiomp5 when kernels.py links it (else on one thread).
//
// The recurrence: one LSTM layer in one direction (bilm-tf's LSTMCell with projection) on the
// packed time-major rows of elmo.LstmStack.
//
// Layout (n_t = batch_sizes[t] rows run at step t, non-increasing; row r of step t is packed
// row offset[t] + r, and row r of step t-1 is its previous state):
//   gates_x [tokens, 4D]  x @ W_input, gate blocks i, j, f, o; bias [4D] is added here (Paddle's
//                         broadcast add is slow on CPU, its backward more so)
//   w_hidden [P, 4D], w_proj [D, P], h0 [B, P], c0 [B, D] with B >= n_0
//   h [tokens, P] (after projection clipping), c [tokens, D] (after cell clipping)
// A clip of 0 means no clipping. The gradient of a clip passes where |clipped value| < clip,
// as Paddle's clip (the input equals the output there).
// In training (LstmTrainingForward, LstmBackward) the kernel takes x [tokens, I] and the layer's whole
// W [I + P, 4D] (W_input over W_hidden) instead of gates_x and w_hidden: it makes x W_input itself,
// and its backward gives the two blocks' gradients in one product per step ([dx | dh_prev]) and one
// after the loop (grad_w), with no copies of the blocks; it also drops x with the Dropout kernel's
// mask, adds the residual and the forget bias and copies out the final states (the ops that ran
// around each call, each with its own dispatch, forward and backward).
// In inference (LstmInference) the kernel takes x [tokens, I] and w_input [I, 4D] instead of gates_x
// and makes the products one block of steps at a time, so that a block's gates are alive, not the
// layer's; it keeps no cells and returns each row's last state.
#include "paddle/extension.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#ifdef ELMO_MKL
// MKL's packed products, from the libmklml_intel.so Paddle ships (its headers are not shipped).
extern "C" {
enum CBLAS_LAYOUT { CblasRowMajor = 101 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
enum CBLAS_IDENTIFIER { CblasAMatrix = 161, CblasBMatrix = 162 };
enum CBLAS_STORAGE { CblasPacked = 151 };
float* cblas_sgemm_alloc(CBLAS_IDENTIFIER identifier, int m, int n, int k);
void cblas_sgemm_pack(CBLAS_LAYOUT layout, CBLAS_IDENTIFIER identifier, CBLAS_TRANSPOSE trans, int m, int n, int k,
                      float alpha, const float* src, int ld, float* dest);
void cblas_sgemm_compute(CBLAS_LAYOUT layout, int transa, int transb, int m, int n, int k, const float* a, int lda,
                         const float* b, int ldb, float beta, float* c, int ldc);
void cblas_sgemm_free(float* dest);
int MKL_Set_Num_Threads_Local(int threads);
}
#endif

using paddle::Tensor;

namespace {

std::vector<int64_t> Offsets(const std::vector<int64_t>& batch_sizes) {
  std::vector<int64_t> offset(batch_sizes.size() + 1, 0);
  for (size_t t = 0; t < batch_sizes.size(); ++t) offset[t + 1] = offset[t] + batch_sizes[t];
  return offset;
}

Tensor Empty(const std::vector<int64_t>& shape) {
  return paddle::empty(shape, paddle::DataType::FLOAT32, paddle::CPUPlace());
}

Tensor Zeros(const std::vector<int64_t>& shape) {
  return paddle::zeros(shape, paddle::DataType::FLOAT32, paddle::CPUPlace());
}

// exp, sigmoid and tanh written so that gcc vectorises the gate loops (scalar libm calls would be
// most of a step); their clamps and selects become vector blends only with -fno-trapping-math
// (kernel_build.py), without which no loop that calls them vectorises. exp: x = n ln2 + r with
// |r| <= ln2 / 2 and Cephes' degree-6 polynomial for exp(r); relative error < 1e-7 on [-87, 88]
// (inputs are clamped there, which sigmoid and tanh do not notice). Absolute errors: sigmoid
// < 1e-7, tanh < 2e-7. NaN propagates.
// c[0] + r (c[1] + r (c[2] + ...)), Horner's rule from the highest coefficient (gcc unrolls it).
template <size_t N>
inline float Horner(float r, const float (&c)[N]) {
  float p = c[N - 1];
  for (size_t i = N - 1; i-- > 0;) p = p * r + c[i];
  return p;
}

inline float Exp(float x) {
  x = x < -87.f ? -87.f : x;
  x = x > 88.f ? 88.f : x;
  const float n = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round to nearest
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;           // x - n ln2 in two parts
  constexpr float kExpCoefficients[] = {5.0000001201e-1f, 1.6666665459e-1f, 4.1665795894e-2f,
                                        8.3334519073e-3f, 1.3981999507e-3f, 1.9875691500e-4f};
  const float p = Horner(r, kExpCoefficients);
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);  // a bit cast any C++11 compiler folds to a move
  return (p * r * r + r + 1.f) * two_n;
}

inline float Sigmoid(float x) { return 1.f / (1.f + Exp(-x)); }

inline float Tanh(float x) {
  // Near 0, 1 - 2 / (exp(2x) + 1) cancels: a Taylor polynomial there (error < 1e-9 for |x| < 1/4).
  const float x2 = x * x;
  const float near_zero = x * (1.f + x2 * (-1.f / 3 + x2 * (2.f / 15 + x2 * (-17.f / 315 + x2 * (62.f / 2835)))));
  const float elsewhere = 1.f - 2.f / (Exp(2.f * x) + 1.f);
  return std::fabs(x) < 0.25f ? near_zero : elsewhere;
}

// Loops over at least this many elements are split among the OpenMP threads (Paddle's own: the
// kernels link Intel's libiomp5, whose threads MKL leaves spinning between products).
constexpr int64_t kParallelMin = 16384;
constexpr int64_t kBlock = 4096;  // elements of one thread's block

// out[j] += sum over rows of x[row, j], x [rows, cols]; threads take blocks of columns.
void ColumnSums(const float* x, int64_t rows, int64_t cols, float* out) {
  constexpr int64_t kColumns = 512;
#pragma omp parallel for if (rows * cols >= kParallelMin)
  for (int64_t start = 0; start < cols; start += kColumns) {
    const int64_t end = std::min(cols, start + kColumns);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = x + r * cols;
#pragma omp simd
      for (int64_t j = start; j < end; ++j) out[j] += row[j];
    }
  }
}

// NaN passes through, as in Paddle's clip (a diverging run must show a non-finite loss).
inline float Clip(float x, float clip) {
  if (clip <= 0.f) return x;
  return x < -clip ? -clip : (x > clip ? clip : x);
}

// 1 where the gradient passes a clip of `clip` whose output is `y`.
inline float ClipPass(float y, float clip) {
  return (clip <= 0.f || std::fabs(y) < clip) ? 1.f : 0.f;
}

// The recurrence's weights and initial state against batch_sizes.
void CheckState(const Tensor& w_hidden, const Tensor& w_proj, const Tensor& h0, const Tensor& c0,
                const std::vector<int64_t>& batch_sizes) {
  PD_CHECK(w_hidden.is_cpu() && w_proj.is_cpu(), "lstm kernel: CPU tensors only");
  const int64_t D = w_proj.shape()[0], P = w_proj.shape()[1];
  PD_CHECK(w_hidden.shape()[0] == P && w_hidden.shape()[1] == 4 * D, "lstm kernel: w_hidden must be [P, 4D]");
  PD_CHECK(!batch_sizes.empty() && batch_sizes[0] <= h0.shape()[0] && h0.shape()[0] == c0.shape()[0],
           "lstm kernel: h0/c0 need at least batch_sizes[0] rows");
  for (size_t t = 0; t < batch_sizes.size(); ++t) {
    PD_CHECK(batch_sizes[t] > 0 && (t == 0 || batch_sizes[t] <= batch_sizes[t - 1]),
             "lstm kernel: batch_sizes must be positive and non-increasing");
  }
}

void CheckInputs(const Tensor& gates_x, const Tensor& w_hidden, const Tensor& w_proj,
                 const Tensor& h0, const Tensor& c0, const std::vector<int64_t>& offset,
                 const std::vector<int64_t>& batch_sizes) {
  PD_CHECK(gates_x.is_cpu(), "lstm kernel: CPU tensors only");
  PD_CHECK(gates_x.dtype() == paddle::DataType::FLOAT32, "lstm kernel: float32 only");
  PD_CHECK(gates_x.shape()[0] == offset.back() && gates_x.shape()[1] == 4 * w_proj.shape()[0],
           "lstm kernel: gates_x must be [sum(batch_sizes), 4D]");
  CheckState(w_hidden, w_proj, h0, c0, batch_sizes);
}

// MKL on one thread on this thread while it lives: a weight packed for the threads of the call
// gives other last bits when the blocks multiply it on one thread each.
class OneMklThread {
 public:
#ifdef ELMO_MKL
  OneMklThread() : before_(MKL_Set_Num_Threads_Local(1)) {}
  ~OneMklThread() { MKL_Set_Num_Threads_Local(before_); }

 private:
  int before_;
#endif
};

// C [m, n] = A [m, k] x B for one right-hand matrix B and many A of at most max_rows rows: the
// recurrence's products (h x W_hidden, m x W_proj, and their transposes backward) at each step.
// With MKL (ELMO_MKL: Paddle's libmklml, kernel_build.py) B is packed into MKL's internal layout
// once per call and each step runs cblas_sgemm_compute, faster than a plain product at the few
// rows of a step. Without it, Paddle's matmul.
class RightMatrix {
 public:
  // b [k, n], or with transpose b [n, k] standing for its transpose, for products of up to
  // max_rows rows (MKL's packed layout, and with it the results, depend on max_rows).
  RightMatrix(const Tensor& b, bool transpose, int64_t max_rows)
      : b_(b.contiguous()), transpose_(transpose),
        k_(transpose ? b.shape()[1] : b.shape()[0]), n_(transpose ? b.shape()[0] : b.shape()[1]) {
    PD_CHECK(b_.is_cpu() && b_.dtype() == paddle::DataType::FLOAT32 && b_.shape().size() == 2,
             "lstm kernel: float32 CPU weight matrices");
#ifdef ELMO_MKL
    const float* source = b_.data<float>();  // before the allocation: nothing below throws
    packed_ = cblas_sgemm_alloc(CblasBMatrix, max_rows, n_, k_);
    PD_CHECK(packed_ != nullptr, "lstm kernel: MKL could not allocate a packed matrix");
    cblas_sgemm_pack(CblasRowMajor, CblasBMatrix, transpose_ ? CblasTrans : CblasNoTrans, max_rows, n_, k_, 1.f,
                     source, transpose_ ? k_ : n_, packed_);
#endif
  }
  ~RightMatrix() {
#ifdef ELMO_MKL
    if (packed_ != nullptr) cblas_sgemm_free(packed_);
#endif
  }
  RightMatrix(const RightMatrix&) = delete;
  RightMatrix& operator=(const RightMatrix&) = delete;

  int64_t n() const { return n_; }

  // c [m, n] = a [m, k] x B, or with accumulate c += a x B; a and c row-major, contiguous.
  void Multiply(const float* a, int64_t m, float* c, bool accumulate = false) const {
#ifdef ELMO_MKL
    cblas_sgemm_compute(CblasRowMajor, CblasNoTrans, CblasPacked, m, n_, k_, a, k_, packed_, n_,
                        accumulate ? 1.f : 0.f, c, n_);
#else
    Tensor a_view = paddle::from_blob(const_cast<float*>(a), {m, k_}, paddle::DataType::FLOAT32);
    Tensor product = paddle::experimental::matmul(a_view, b_, false, transpose_);
    const float* pv = product.data<float>();
    if (!accumulate) {
      std::memcpy(c, pv, sizeof(float) * m * n_);
      return;
    }
#pragma omp simd
    for (int64_t e = 0; e < m * n_; ++e) c[e] += pv[e];
#endif
  }

 private:
  Tensor b_;
  bool transpose_;
  int64_t k_, n_;
#ifdef ELMO_MKL
  float* packed_ = nullptr;  // b in MKL's layout, packed here, freed here
#endif
};

// row [k] += b [k], one row of a step's input products (LstmForward's training path).
inline void AddBias(const float* b, int64_t k, float* row) {
#pragma omp simd
  for (int64_t e = 0; e < k; ++e) row[e] += b[e];
}

// How a step's gate pass reads its pre-activations and what it keeps.
enum class Gates {
  kDropped,  // gx + b + rec, no activations (inference on gates_x)
  kSummed,   // gx already holds x W_input + h_prev W_hidden (rec is not read), no activations
  kInPlace,  // gx already holds (x W_input + b) + h_prev W_hidden (rec is not read); the activations
             // written over it (training: the backward reads them), b added to the next step's rows
};

// The gates of a step's n rows: c = clip(i * j + f * c_prev), m = o * tanh(c), and with kInPlace
// acts = (i, j, f, o). kind is a template parameter so that each variant's loop
// vectorises alone. gx, rec, acts [n, 4D]; c_prev, c_rows, m_rows [n, D]; c_rows may be c_prev.
// kInPlace: acts is gx (each element is read before it is written), and the first n_next rows of
// next_gx [n_next, 4D] (the next step's) get b added, while this pass has the threads.
template <Gates kind>
void GatePass(const float* gx, const float* rec, const float* b, const float* c_prev, int64_t n, int64_t D,
              float cell_clip, float* acts, float* c_rows, float* m_rows, float* next_gx = nullptr,
              int64_t n_next = 0) {
#pragma omp parallel for if (n * D >= kParallelMin)
  for (int64_t row = 0; row < n; ++row) {
    const float* g = gx + row * 4 * D;
    const float* rr = kind == Gates::kDropped ? rec + row * 4 * D : g;
    float* a = kind == Gates::kInPlace ? acts + row * 4 * D : nullptr;
    const float* cp = c_prev + row * D;
    float* c_row = c_rows + row * D;
    float* m_row = m_rows + row * D;
    // (gx + b) + rec; kSummed adds b to the product's (gx + rec): another order of the same sum;
    // kInPlace's gx holds (gx + b) + rec already, summed in that order (LstmForward).
    const auto pre = [&](int64_t e) {
      return kind == Gates::kInPlace ? g[e] : kind == Gates::kSummed ? g[e] + b[e] : g[e] + b[e] + rr[e];
    };
#pragma omp simd
    for (int64_t k = 0; k < D; ++k) {
      const float i = Sigmoid(pre(k)), j = Tanh(pre(D + k));
      const float f = Sigmoid(pre(2 * D + k)), o = Sigmoid(pre(3 * D + k));
      const float cell = Clip(i * j + f * cp[k], cell_clip);
      c_row[k] = cell;
      m_row[k] = o * Tanh(cell);
      if (kind == Gates::kInPlace) a[k] = i, a[D + k] = j, a[2 * D + k] = f, a[3 * D + k] = o;
    }
    if (kind == Gates::kInPlace && row < n_next) AddBias(b, 4 * D, next_gx + row * 4 * D);
  }
}

// h_rows [n, P] = clip(m_rows [n, D] x W_proj).
void Project(const RightMatrix& proj, const float* m_rows, int64_t n, float proj_clip, float* h_rows) {
  proj.Multiply(m_rows, n, h_rows);
  const int64_t P = proj.n();
#pragma omp simd
  for (int64_t e = 0; e < n * P; ++e) h_rows[e] = Clip(h_rows[e], proj_clip);
}

// One step of the recurrence on its n rows (rows of the previous step's state first):
//   gates = gx + b + h_prev x W_hidden, c = clip(i * j + f * c_prev), m = o * tanh(c), h = clip(m x W_proj).
// gx [n, 4D]; c_prev, c_rows, m_rows [n, D]; h_prev, h_rows [n, P]. c_rows may be c_prev (an
// element is read before it is written).
// save (training): gx holds gx + b already; h_prev x W_hidden is added into it by MKL (one array
// for the gate pass to read, no scratch), and the activations are written over it; b is added to
// the next step's n_next rows, which follow (gx + n * 4D). The sum's order is the one without save,
// (gx + b) + rec: the same bits wherever MKL's accumulating product rounds as its product and then
// an add (a step of one row may differ in the last bit).
// Without save: rec [n, 4D] scratch takes the product, gx is only read and no activations are kept.
void ForwardStep(const RightMatrix& hidden, const RightMatrix& proj, float* gx, const float* b, const float* h_prev,
                 const float* c_prev, int64_t n, int64_t n_next, int64_t D, float cell_clip, float proj_clip,
                 bool save, float* rec, float* c_rows, float* m_rows, float* h_rows) {
  if (save) {
    hidden.Multiply(h_prev, n, gx, true);  // [n, 4D]
    GatePass<Gates::kInPlace>(gx, nullptr, b, c_prev, n, D, cell_clip, gx, c_rows, m_rows, gx + n * 4 * D, n_next);
  } else {
    hidden.Multiply(h_prev, n, rec);  // [n, 4D]
    GatePass<Gates::kDropped>(gx, rec, b, c_prev, n, D, cell_clip, nullptr, c_rows, m_rows);
  }
  Project(proj, m_rows, n, proj_clip, h_rows);
}

// The rows [first, first + rows) of a contiguous [R, C] matrix, as a tensor over its memory (no copy):
// the layer's W [I + P, 4D] is W_input over W_hidden.
Tensor RowsView(const Tensor& w, int64_t first, int64_t rows) {
  const int64_t cols = w.shape()[1];
  return paddle::from_blob(const_cast<float*>(w.data<float>()) + first * cols, {rows, cols},
                           paddle::DataType::FLOAT32);
}

// The recurrence over gates_x [tokens, 4D] (contiguous; with save overwritten by the activations)
// -> h, c, acts, m as LstmForward's and LstmTrainingForward's.
std::vector<Tensor> Recurrence(Tensor gates_x, const Tensor& bias_in, const Tensor& w_hidden, const Tensor& w_proj,
                               const Tensor& h0_in, const Tensor& c0_in, const std::vector<int64_t>& batch_sizes,
                               float cell_clip, float proj_clip, bool save) {
  const Tensor h0 = h0_in.contiguous(), c0 = c0_in.contiguous(), bias = bias_in.contiguous();
  const auto offset = Offsets(batch_sizes);
  CheckInputs(gates_x, w_hidden, w_proj, h0, c0, offset, batch_sizes);
  PD_CHECK(bias.numel() == gates_x.shape()[1], "lstm kernel: bias must be [4D]");
  const int64_t D = w_proj.shape()[0], P = w_proj.shape()[1], tokens = offset.back();
  const int64_t steps = static_cast<int64_t>(batch_sizes.size());
  Tensor h = Empty({tokens, P}), c = Empty({tokens, D});
  Tensor m = Empty({save ? tokens : batch_sizes[0], D});
  // Scratch as Paddle tensors, not std::vector: MKL's results depend on its operands' alignment,
  // and Paddle's allocations are aligned alike from call to call (malloc's are not).
  Tensor rec_t = Empty({save ? 0 : batch_sizes[0], 4 * D});  // h_prev x W_hidden of a step, without save
  const RightMatrix hidden(w_hidden, false, batch_sizes[0]);
  const RightMatrix proj(w_proj, false, batch_sizes[0]);
  const float* b = bias.data<float>();
  float *gx = gates_x.data<float>(), *c_out = c.data<float>(), *h_out = h.data<float>();
  if (save) {  // the first step's rows get b here, every later step's in the gate pass before them
#pragma omp parallel for if (batch_sizes[0] * D >= kParallelMin)
    for (int64_t row = 0; row < batch_sizes[0]; ++row) AddBias(b, 4 * D, gx + row * 4 * D);
  }
  for (int64_t t = 0; t < steps; ++t) {
    const int64_t n = batch_sizes[t], at = offset[t], n_next = t + 1 < steps ? batch_sizes[t + 1] : 0;
    const float* h_prev = t == 0 ? h0.data<float>() : h_out + offset[t - 1] * P;
    const float* c_prev = t == 0 ? c0.data<float>() : c_out + offset[t - 1] * D;
    ForwardStep(hidden, proj, gx + at * 4 * D, b, h_prev, c_prev, n, n_next, D, cell_clip, proj_clip, save,
                rec_t.data<float>(), c_out + at * D, m.data<float>() + (save ? at : 0) * D, h_out + at * P);
  }
  return {h, c, save ? gates_x : Empty({0, 4 * D}), m};
}

// ---- Dropout's mask (the Dropout kernel below; the training recurrence drops its inputs with it) ----
// keep = 1 where a hash of (seed, element index) is at least p: the murmur3 finaliser over a Weyl
// sequence, a counter-based generator (see "Dropout" below).
inline uint32_t DropoutHash(uint32_t index, uint32_t seed_lo, uint32_t seed_hi) {
  uint32_t h = index * 0x9E3779B9u + seed_lo;
  h ^= seed_hi;
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h;
}

void CheckDropout(int64_t numel, float p) {
  PD_CHECK(p >= 0.f && p < 1.f, "dropout kernel: p in [0, 1)");
  PD_CHECK(numel < (int64_t{1} << 32), "dropout kernel: at most 2^32 elements");
}

// The mask of one seed and p: an element is kept when the hash's top 24 bits, as a fraction of
// 2^24, are >= p, and then scaled by 1 / (1 - p).
struct DropoutMask {
  DropoutMask(int64_t seed, float p)
      : lo(static_cast<uint32_t>(seed)), hi(static_cast<uint32_t>(static_cast<uint64_t>(seed) >> 32)),
        threshold(static_cast<uint32_t>(std::ceil(static_cast<double>(p) * 16777216.0))), scale(1.f / (1.f - p)) {}

  // y [n] = x [n] through the mask, x [0] being element `first` of the masked tensor.
  void Apply(const float* x, int64_t first, int64_t n, float* y) const {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t u = DropoutHash(static_cast<uint32_t>(first + i), lo, hi) >> 8;
      y[i] = u >= threshold ? x[i] * scale : 0.f;
    }
  }

  uint32_t lo, hi, threshold;
  float scale;
};

// y [n] = x [n] through the mask (x [0] being element `first`), in blocks among the threads.
void DropoutInto(const float* x, int64_t n, int64_t first, const DropoutMask& mask, float* y) {
#pragma omp parallel for if (n >= kParallelMin)
  for (int64_t start = 0; start < n; start += kBlock) {
    mask.Apply(x + start, first + start, std::min(kBlock, n - start), y + start);
  }
}

// Each running row's packed row of its last step, of a packed [tokens, d] -> [n_0, d] (row r runs
// the steps whose batch size exceeds r, the first ones: rows are sorted longest first).
Tensor LastRows(const Tensor& packed, const std::vector<int64_t>& batch_sizes) {
  const auto offset = Offsets(batch_sizes);
  const int64_t d = packed.shape()[1], n0 = batch_sizes.empty() ? 0 : batch_sizes[0];
  Tensor last = Empty({n0, d});
  int64_t steps = static_cast<int64_t>(batch_sizes.size());
  for (int64_t row = 0; row < n0; ++row) {  // a later row runs no more steps than an earlier one
    while (batch_sizes[steps - 1] <= row) --steps;
    std::memcpy(last.data<float>() + row * d, packed.data<float>() + (offset[steps - 1] + row) * d,
                sizeof(float) * d);
  }
  return last;
}

// The layer's inputs x [tokens, I] and W [I + P, 4D] (W_input over W_hidden) against w_proj.
void CheckLayerInputs(const Tensor& x, const Tensor& w, const Tensor& w_proj) {
  PD_CHECK(x.is_cpu() && w.is_cpu() && x.dtype() == paddle::DataType::FLOAT32 &&
               w.dtype() == paddle::DataType::FLOAT32,
           "lstm kernel: float32 CPU tensors only");
  PD_CHECK(x.shape().size() == 2 && w.shape().size() == 2 && w.shape()[0] == x.shape()[1] + w_proj.shape()[1] &&
               w.shape()[1] == 4 * w_proj.shape()[0],
           "lstm kernel: W must be [input_dim + P, 4D] for x [tokens, input_dim]");
}

}  // namespace

// The recurrence without gradients on given input products gates_x [tokens, 4D] (only read)
// -> h [tokens, P], c [tokens, D].
std::vector<Tensor> LstmForward(const Tensor& gates_x, const Tensor& bias, const Tensor& w_hidden,
                                const Tensor& w_proj, const Tensor& h0, const Tensor& c0,
                                const std::vector<int64_t>& batch_sizes, float cell_clip, float proj_clip) {
  // The loops read raw rows: strided views (Paddle 3 slices may be) are copied first.
  auto out = Recurrence(gates_x.contiguous(), bias, w_hidden, w_proj, h0, c0, batch_sizes, cell_clip, proj_clip,
                        false);
  return {out[0], out[1]};
}

// The recurrence in training from the layer's inputs x [tokens, I] and its whole W [I + P, 4D]:
// the input products x W_input are made here on W's rows (no copy of either block), into the array
// the activations are then written over (no second [tokens, 4D] array).
// -> h [tokens, P], c [tokens, D], acts [tokens, 4D] (sigmoid i, tanh j, sigmoid f, sigmoid o),
//    m [tokens, D] (o * tanh(c), the projection's input), which LstmBackward reads, and
//    h_last [n_0, P], c_last [n_0, D]: each running row's state after its last step (LastRows), so
//    that the caller needs no gathers for the states it carries on.
// With p > 0 the layer's input is dropped first (the Dropout kernel's mask of seed and p, x [0, 0]
// being element `first` of the masked tensor: a group of steps' rows of the layer's input), and
// dropped [tokens, I], the product's input, is returned for the backward. With residual (I = P),
// sum [tokens, P] = h + the product's input (dropped, as bilm-tf's dropout wraps its residual
// cell), the layer's output of a residual connection.
// bias_offset [4D] (or [0]: none) is added to bias here, as the layer's forget bias: no add op
// forward or backward (the gradient of the sum is the bias's).
std::vector<Tensor> LstmTrainingForward(const Tensor& x_in, const Tensor& w_in, const Tensor& bias_in,
                                        const Tensor& w_proj, const Tensor& h0, const Tensor& c0,
                                        const Tensor& bias_offset_in, const std::vector<int64_t>& batch_sizes,
                                        float cell_clip, float proj_clip, int64_t seed, float p, int64_t first,
                                        bool residual) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous();
  CheckLayerInputs(x, w, w_proj);
  const int64_t I = x.shape()[1], P = w_proj.shape()[1];
  Tensor bias = bias_in.contiguous();
  const Tensor bias_offset = bias_offset_in.contiguous();
  if (bias_offset.numel() != 0) {
    PD_CHECK(bias_offset.numel() == bias.numel() && bias_offset.dtype() == paddle::DataType::FLOAT32,
             "lstm kernel: the bias offset must be float32 [4D] like the bias");
    Tensor sum = Empty({bias.numel()});
    const float *bv = bias.data<float>(), *ov = bias_offset.data<float>();
    float* sv = sum.data<float>();
    for (int64_t e = 0; e < bias.numel(); ++e) sv[e] = bv[e] + ov[e];
    bias = sum;
  }
  PD_CHECK(!residual || I == P, "lstm kernel: a residual connection needs input_dim = P");
  Tensor dropped = Empty({p > 0.f ? x.shape()[0] : 0, I});
  if (p > 0.f) {
    CheckDropout(first + x.numel(), p);
    DropoutInto(x.data<float>(), x.numel(), first, DropoutMask(seed, p), dropped.data<float>());
  }
  Tensor gates_x = paddle::experimental::matmul(p > 0.f ? dropped : x, RowsView(w, 0, I), false, false);  // [tokens, 4D]
  auto out = Recurrence(gates_x, bias, RowsView(w, I, P), w_proj, h0, c0, batch_sizes, cell_clip, proj_clip, true);
  out.push_back(LastRows(out[0], batch_sizes));
  out.push_back(LastRows(out[1], batch_sizes));
  Tensor sum = Empty({residual ? x.shape()[0] : 0, P});
  const float *hv = out[0].data<float>(), *xv = p > 0.f ? dropped.data<float>() : x.data<float>();
  float* sv = sum.data<float>();
#pragma omp parallel for simd if (sum.numel() >= kParallelMin)
  for (int64_t e = 0; e < sum.numel(); ++e) sv[e] = hv[e] + xv[e];
  out.push_back(sum);
  out.push_back(dropped);
  return out;
}

// The recurrence in inference from the layer's inputs x [tokens, I] and w_input [I, 4D] instead of
// their products: each block of steps' products x x w_input are made just before its steps run, so
// one block's [block rows, 4D] are alive, not the layer's (the largest buffer of the embedding).
// block_ends: the step where each block ends (increasing, the last = the number of steps).
// -> h [tokens, P], and each row's state after its last step: h_last [B, P], c_last [B, D] (rows
// that did not run keep h0, c0). No cells are kept: c_last is the running state.
std::vector<Tensor> LstmInference(const Tensor& x_in, const Tensor& w_input, const Tensor& bias_in,
                                  const Tensor& w_hidden, const Tensor& w_proj, const Tensor& h0_in,
                                  const Tensor& c0_in, const std::vector<int64_t>& batch_sizes,
                                  const std::vector<int64_t>& block_ends, float cell_clip, float proj_clip) {
  const Tensor x = x_in.contiguous(), w_in = w_input.contiguous(), bias = bias_in.contiguous();
  const Tensor h0 = h0_in.contiguous(), c0 = c0_in.contiguous();
  const auto offset = Offsets(batch_sizes);
  const int64_t D = w_proj.shape()[0], P = w_proj.shape()[1], tokens = offset.back(), I = x.shape()[1];
  PD_CHECK(x.is_cpu() && x.dtype() == paddle::DataType::FLOAT32 && x.shape()[0] == tokens,
           "lstm kernel: x must be float32 [sum(batch_sizes), input_dim] on the CPU");
  PD_CHECK(w_in.shape()[0] == I && w_in.shape()[1] == 4 * D, "lstm kernel: w_input must be [input_dim, 4D]");
  PD_CHECK(bias.numel() == 4 * D, "lstm kernel: bias must be [4D]");
  PD_CHECK(!block_ends.empty() && block_ends.back() == static_cast<int64_t>(batch_sizes.size()),
           "lstm kernel: block_ends must end at the last step");
  CheckState(w_hidden, w_proj, h0, c0, batch_sizes);
  const int64_t B = h0.shape()[0], n0 = batch_sizes[0];
  Tensor h = Empty({tokens, P}), h_last = Empty({B, P}), c_last = Empty({B, D});
  // Rows past n0 never run; every other row's h_last is written at the step where it ends.
  std::memcpy(h_last.data<float>() + n0 * P, h0.data<float>() + n0 * P, sizeof(float) * (B - n0) * P);
  std::memcpy(c_last.data<float>(), c0.data<float>(), sizeof(float) * B * D);
  // Scratch as a Paddle tensor: aligned alike from call to call, as MKL's results need (LstmForward).
  Tensor m = Empty({n0, D});
  const RightMatrix hidden(w_hidden, false, n0);
  const RightMatrix proj(w_proj, false, n0);
  int64_t block_rows = 0, t = 0;
  for (const int64_t end : block_ends) {
    PD_CHECK(end > t && end <= static_cast<int64_t>(batch_sizes.size()),
             "lstm kernel: block_ends must be increasing, up to the number of steps");
    block_rows = std::max(block_rows, offset[end] - offset[t]);
    t = end;
  }
  // W_input packed once for every block (a plain product would pack it again at each block), and
  // one gate buffer that every block's products overwrite; each step adds h_prev x W_hidden to its
  // rows there (the buffer is read once), so that the gate pass reads one array, not two.
  const RightMatrix input(w_in, false, block_rows);
  Tensor gate_buffer = Empty({block_rows, 4 * D});
  float *h_out = h.data<float>(), *c_state = c_last.data<float>(), *gates = gate_buffer.data<float>();
  const int64_t steps = static_cast<int64_t>(batch_sizes.size());
  t = 0;
  for (const int64_t end : block_ends) {
    const int64_t first = offset[t];
    input.Multiply(x.data<float>() + first * I, offset[end] - first, gates);  // [block rows, 4D]
    for (; t < end; ++t) {
      const int64_t n = batch_sizes[t], at = offset[t];
      const float* h_prev = t == 0 ? h0.data<float>() : h_out + offset[t - 1] * P;
      float* step_gates = gates + (at - first) * 4 * D;
      hidden.Multiply(h_prev, n, step_gates, true);  // (x W_input + h_prev W_hidden) [n, 4D]
      GatePass<Gates::kSummed>(step_gates, nullptr, bias.data<float>(), c_state, n, D, cell_clip, nullptr, c_state,
                               m.data<float>());
      Project(proj, m.data<float>(), n, proj_clip, h_out + at * P);
      // The rows that end here (the next step runs the first n_next): their last h.
      const int64_t n_next = t + 1 < steps ? batch_sizes[t + 1] : 0;
      std::memcpy(h_last.data<float>() + n_next * P, h_out + (at + n_next) * P, sizeof(float) * (n - n_next) * P);
    }
  }
  return {h, h_last, c_last};
}

// Gradients of LstmTrainingForward from grad_h [tokens, P] and grad_c [tokens, D] (or [0, D]: no
// loss reads the cells, their gradient is zero and never filled), and grad_skip [tokens, P] (or
// [0, P]: none), the gradient of a residual connection's output, which x (the product's input,
// x [tokens, I] here: the dropped copy when the forward dropped it) takes too. With dropout, x's
// gradient goes through the forward's mask (its seed, p and first) to the layer's undropped input.
// -> grad_x [tokens, I], grad_w [I + P, 4D], grad_bias [4D], grad_w_proj [D, P], grad_h0 [B, P],
//    grad_c0 [B, D].
// W's two blocks take their gradients together: each step's gate gradient dg [n, 4D] meets all of
// W^T in one product, dg W^T = [dx | dh_prev], and after the loop grad_w = [x | h_prev]^T dg is one
// product over all the tokens.
std::vector<Tensor> LstmBackward(const Tensor& x_in, const Tensor& w_in, const Tensor& w_proj, const Tensor& h0_in,
                                 const Tensor& c0_in, const Tensor& h, const Tensor& c,
                                 const Tensor& acts, const Tensor& m, const Tensor& grad_h_in,
                                 const Tensor& grad_c_in, const Tensor& grad_skip_in,
                                 const std::vector<int64_t>& batch_sizes, float cell_clip, float proj_clip,
                                 int64_t seed, float p, int64_t first) {
  const Tensor x = x_in.contiguous(), w = w_in.contiguous(), h0 = h0_in.contiguous(), c0 = c0_in.contiguous();
  const Tensor grad_h = grad_h_in.contiguous(), grad_c = grad_c_in.contiguous();
  CheckLayerInputs(x, w, w_proj);
  const auto offset = Offsets(batch_sizes);
  const int64_t D = w_proj.shape()[0], P = w_proj.shape()[1], tokens = offset.back(), I = x.shape()[1];
  const int64_t B = h0.shape()[0], T = static_cast<int64_t>(batch_sizes.size()), n0 = batch_sizes[0];
  const int64_t IP = I + P;  // a row of [x | h_prev], and of its gradient [dx | dh_prev]
  PD_CHECK(acts.shape()[0] == tokens && m.shape()[0] == tokens && x.shape()[0] == tokens,
           "lstm kernel: the backward needs the forward's inputs and saved activations");
  const bool cells_have_grad = grad_c.shape()[0] != 0;
  const Tensor grad_skip = grad_skip_in.contiguous();
  const bool skip_has_grad = grad_skip.shape()[0] != 0;
  PD_CHECK(!skip_has_grad || (I == P && grad_skip.shape()[0] == tokens && grad_skip.shape()[1] == P),
           "lstm kernel: grad_skip must be [tokens, P] (a residual connection: input_dim = P) or [0, P]");
  const float* gs = skip_has_grad ? grad_skip.data<float>() : nullptr;
  const DropoutMask mask(seed, p > 0.f ? p : 0.f);
  PD_CHECK(grad_h.shape()[0] == tokens && (!cells_have_grad || grad_c.shape()[0] == tokens),
           "lstm kernel: grad_h must be [tokens, P] and grad_c [tokens, D] or [0, D]");
  Tensor grad_gates = Empty({tokens, 4 * D}), grad_h_raw = Empty({tokens, P}), grad_x = Empty({tokens, I});
  Tensor grad_h0 = Zeros({B, P}), grad_c0 = Zeros({B, D});
  std::vector<float> dc_carry(n0 * D, 0.f);  // d loss / d c of the next step's previous state
  const std::vector<float> zeros(std::max(P, D), 0.f);  // a row of h's or c's gradient where none comes
  // Scratch as Paddle tensors (aligned alike from call to call, as MKL's results need: see Recurrence).
  Tensor dxh_t = Empty({n0, IP}), dm_t = Empty({n0, D});
  float* dxh = dxh_t.data<float>();  // [n, I + P]: a step's [dx | dh_prev]; dh_prev is carried to the step before
  float* dm = dm_t.data<float>();    // d loss / d m of a step
  const RightMatrix weights_t(w, true, n0);  // W^T [4D, I + P]
  const RightMatrix proj_t(w_proj, true, n0);
  const float *hv = h.data<float>(), *cv = c.data<float>(), *av = acts.data<float>();
  const float *gh = grad_h.data<float>(), *gc = cells_have_grad ? grad_c.data<float>() : nullptr;
  float *dg = grad_gates.data<float>(), *dx = grad_x.data<float>();
  Tensor grad_bias = Zeros({4 * D});
  float* db = grad_bias.data<float>();
  float* dhr = grad_h_raw.data<float>();
  for (int64_t t = T - 1; t >= 0; --t) {
    const int64_t n = batch_sizes[t], at = offset[t], n_next = t + 1 < T ? batch_sizes[t + 1] : 0;
#pragma omp parallel for if (n * P >= kParallelMin)
    for (int64_t row = 0; row < n; ++row) {
      const float* carried = row < n_next ? dxh + row * IP + I : zeros.data();
      const int64_t e = (at + row) * P;
#pragma omp simd
      for (int64_t p = 0; p < P; ++p) dhr[e + p] = (gh[e + p] + carried[p]) * ClipPass(hv[e + p], proj_clip);
    }
    proj_t.Multiply(dhr + at * P, n, dm);  // [n, D]
    const float* dmv = dm;
    const float* c_prev = t == 0 ? c0.data<float>() : cv + offset[t - 1] * D;
#pragma omp parallel for if (n * D >= kParallelMin)
    for (int64_t row = 0; row < n; ++row) {
      const float* a = av + (at + row) * 4 * D;
      const float* cp = c_prev + row * D;
      const float* cell = cv + (at + row) * D;
      const float* gcell = cells_have_grad ? gc + (at + row) * D : zeros.data();
      const float* dmr = dmv + row * D;
      float* d = dg + (at + row) * 4 * D;
      float* carry = dc_carry.data() + row * D;
      const float keep = row < n_next ? 1.f : 0.f;  // rows that end here have no next step
#pragma omp simd
      for (int64_t k = 0; k < D; ++k) {
        const float i = a[k], j = a[D + k], f = a[2 * D + k], o = a[3 * D + k];
        const float tc = Tanh(cell[k]);
        const float dc = (gcell[k] + keep * carry[k] + dmr[k] * o * (1.f - tc * tc)) * ClipPass(cell[k], cell_clip);
        d[k] = dc * j * i * (1.f - i);
        d[D + k] = dc * i * (1.f - j * j);
        d[2 * D + k] = dc * cp[k] * f * (1.f - f);
        d[3 * D + k] = dmr[k] * tc * o * (1.f - o);
        carry[k] = dc * f;
      }
    }
    ColumnSums(dg + at * 4 * D, n, 4 * D, db);  // the bias's gradient, while the step's rows are in cache
    weights_t.Multiply(dg + at * 4 * D, n, dxh);  // [n, I + P] = [dx | dh_prev]
    for (int64_t row = 0; row < n; ++row) {  // dx (+ the residual's gradient) through the dropout mask
      if (skip_has_grad) {  // the product's input is also added to the output: the two gradients summed, as Paddle's
        float* dxr = dxh + row * IP;
        const float* ghr = gs + (at + row) * P;
#pragma omp simd
        for (int64_t k = 0; k < I; ++k) dxr[k] += ghr[k];
      }
      if (p > 0.f) {
        mask.Apply(dxh + row * IP, first + (at + row) * I, I, dx + (at + row) * I);
      } else {
        std::memcpy(dx + (at + row) * I, dxh + row * IP, sizeof(float) * I);
      }
    }
  }
  for (int64_t row = 0; row < n0; ++row) {
    std::memcpy(grad_h0.data<float>() + row * P, dxh + row * IP + I, sizeof(float) * P);
  }
  std::memcpy(grad_c0.data<float>(), dc_carry.data(), sizeof(float) * n0 * D);
  // [x | h_prev] [tokens, I + P]: step t's rows are x's and the previous step's h (h0 for the first).
  Tensor xh_t = Empty({tokens, IP});
  float* xh = xh_t.data<float>();
  const float* xv = x.data<float>();
#pragma omp parallel for if (tokens * IP >= kParallelMin)
  for (int64_t t = 0; t < T; ++t) {
    const float* prev = t == 0 ? h0.data<float>() : hv + offset[t - 1] * P;
    for (int64_t row = 0; row < batch_sizes[t]; ++row) {
      const int64_t r = offset[t] + row;
      std::memcpy(xh + r * IP, xv + r * I, sizeof(float) * I);
      std::memcpy(xh + r * IP + I, prev + row * P, sizeof(float) * P);
    }
  }
  Tensor grad_w = paddle::experimental::matmul(xh_t, grad_gates, true, false);
  Tensor grad_w_proj = paddle::experimental::matmul(m, grad_h_raw, true, false);
  return {grad_x, grad_w, grad_bias, grad_w_proj, grad_h0, grad_c0};
}

PD_BUILD_OP(elmo_lstm_forward)
    .Inputs({"GatesX", "Bias", "WHidden", "WProj", "H0", "C0"})
    .Outputs({"H", "C"})
    .Attrs({"batch_sizes: std::vector<int64_t>", "cell_clip: float", "proj_clip: float"})
    .SetKernelFn(PD_KERNEL(LstmForward));

PD_BUILD_OP(elmo_lstm_training_forward)
    .Inputs({"X", "W", "Bias", "WProj", "H0", "C0", "BiasOffset"})
    .Outputs({"H", "C", "Acts", "M", "HLast", "CLast", "Sum", "Dropped"})
    .Attrs({"batch_sizes: std::vector<int64_t>", "cell_clip: float", "proj_clip: float", "seed: int64_t",
            "p: float", "first: int64_t", "residual: bool"})
    .SetKernelFn(PD_KERNEL(LstmTrainingForward));

PD_BUILD_OP(elmo_lstm_backward)
    .Inputs({"X", "W", "WProj", "H0", "C0", "H", "C", "Acts", "M", "GradH", "GradC", "GradSkip"})
    .Outputs({"GradX", "GradW", "GradBias", "GradWProj", "GradH0", "GradC0"})
    .Attrs({"batch_sizes: std::vector<int64_t>", "cell_clip: float", "proj_clip: float", "seed: int64_t",
            "p: float", "first: int64_t"})
    .SetKernelFn(PD_KERNEL(LstmBackward));

PD_BUILD_OP(elmo_lstm_inference)
    .Inputs({"X", "WInput", "Bias", "WHidden", "WProj", "H0", "C0"})
    .Outputs({"H", "HLast", "CLast"})
    .Attrs({"batch_sizes: std::vector<int64_t>", "block_ends: std::vector<int64_t>", "cell_clip: float",
            "proj_clip: float"})
    .SetKernelFn(PD_KERNEL(LstmInference));

// One position's values xk [n] into the running max b [n] and, when c is given, the count c [n] of
// positions that reach it (the first position, `first`, is copied in, with c = 1). NaN wins, as a
// diverging run must show. The forward takes the max alone; the backward finds it again with the
// counts, by the same calls in the same order (the same bits).
inline void MaxStep(const float* xk, bool first, float* b, float* c, int64_t n) {
  if (first) {
    std::memcpy(b, xk, sizeof(float) * n);
    if (c != nullptr) std::fill(c, c + n, 1.f);
    return;
  }
  // Both sides of every test are computed (| not ||) and both stores always made: a loop that
  // stores conditionally vectorises into masked stores, microcoded and slow on AMD.
  if (c == nullptr) {
#pragma omp simd
    for (int64_t e = 0; e < n; ++e) {
      const float x = xk[e], best = b[e];
      b[e] = (x > best) | (x != x) ? x : best;
    }
    return;
  }
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) {
    const float x = xk[e], best = b[e];
    const bool above = (x > best) | (x != x);
    const float tie = x == best ? 1.f : 0.f;
    c[e] = above ? 1.f : c[e] + tie;
    b[e] = above ? x : best;
  }
}

// A position's share gk [n] of the max's gradient: share (g / c, the max's gradient over its ties)
// where its value xk reached the max b, else 0. gk may be xk.
inline void TieShare(const float* xk, const float* b, const float* share, float* gk, int64_t n) {
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) gk[e] = xk[e] == b[e] ? share[e] : 0.f;
}

// ---- The char CNN on a call's distinct tokens ------------------------------------------------------
// bilm-tf's char CNN, each filter's max over the windows of a token's embedded chars, in one call per
// direction of the step: each window's product is made from the call's chars (see kCharColumns)
// and pooled while in cache, so that neither the windows nor (in inference) the products of every
// window reach memory, and each token runs only its own windows (Paddle's ops pad a chunk's tokens
// to its longest). The windows a token's chars end before are all PAD and all give one value for
// every token: it is computed once and counted as many times as the reference has them.
// Shapes (T tokens, M = max_chars, C = char_dim, widths w_i with n_i filters, N = sum n_i):
//   ids [T, cols] int64 (shifted char ids, cols >= M; the first M read), spans [T] int64 (window k of
//   token t holds a char other than PAD when k < spans[t]; M when a token's tail holds anything but
//   PAD), embed [V, C], weights[i] [w_i * C, n_i], biases[i] [n_i];
//   out [T, N]: activation(each filter's max over the token's M - w_i + 1 windows + its bias), the
//   widths side by side: the bias and relu added while the max is in cache (relu false: no
//   activation, the caller's follows); the backward finds the max again, and how many windows reach
//   it (the PAD ones M - w_i + 1 - spans[t] at once), from the products;
//   products[i] [R_i + 1, n_i] (training only): row WindowRows(i)[t] + k is window k of token t, the
//   last row the PAD windows' value, stored a block of columns at a time (kCharColumns).

// The first row of each token's windows of width w among a call's rows (the last entry, their
// count): token t has min(M - w + 1, spans[t]) windows that hold a char.
std::vector<int64_t> WindowRows(const int64_t* spans, int64_t T, int64_t M, int64_t w) {
  std::vector<int64_t> rows(T + 1, 0);
  for (int64_t t = 0; t < T; ++t) rows[t + 1] = rows[t] + std::min(M - w + 1, spans[t]);
  return rows;
}

// Floats at a 64-byte boundary, for the kernels' scratch: sums may run in another order at another
// alignment, and malloc's varies from run to run (the LSTM kernels take Paddle's tensors as scratch
// for the same reason).
class AlignedFloats {
 public:
  explicit AlignedFloats(int64_t n)
      : data_(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 127) / 64 * 64)), &std::free) {
    PD_CHECK(data_ != nullptr, "char_cnn: out of memory");
  }
  float* data() { return data_.get(); }

 private:
  std::unique_ptr<float, decltype(&std::free)> data_;
};

void CheckCharCnn(const Tensor& ids, const Tensor& spans, const Tensor& embed, const std::vector<Tensor>& weights,
                  const std::vector<Tensor>& biases, int64_t M, int64_t pad_id) {
  PD_CHECK(ids.dtype() == paddle::DataType::INT64 && ids.shape().size() == 2 && ids.shape()[1] >= M &&
               spans.dtype() == paddle::DataType::INT64 && spans.numel() == ids.shape()[0],
           "char_cnn: int64 ids [tokens, >= max_chars] and spans [tokens]");
  PD_CHECK(embed.is_cpu() && embed.dtype() == paddle::DataType::FLOAT32 && embed.shape().size() == 2,
           "char_cnn: float32 CPU char embedding [V, C]");
  const int64_t V = embed.shape()[0], C = embed.shape()[1];
  PD_CHECK(pad_id >= 0 && pad_id < V, "char_cnn: the PAD id ", pad_id, " is not in [0, ", V, ")");
  for (const Tensor& weight : weights) {
    PD_CHECK(weight.dtype() == paddle::DataType::FLOAT32 && weight.shape().size() == 2 &&
                 weight.shape()[0] % C == 0 && weight.shape()[0] / C <= M,
             "char_cnn: each weight [width * char_dim, n] with width <= max_chars");
  }
  PD_CHECK(biases.size() == weights.size(), "char_cnn: one bias per weight");
  for (size_t i = 0; i < biases.size(); ++i) {
    PD_CHECK(biases[i].dtype() == paddle::DataType::FLOAT32 && biases[i].numel() == weights[i].shape()[1],
             "char_cnn: each bias [n], its weight's columns");
  }
  const int64_t *iv = ids.data<int64_t>(), *sv = spans.data<int64_t>();
  for (int64_t e = 0; e < ids.numel(); ++e) {
    PD_CHECK(iv[e] >= 0 && iv[e] < V, "char_cnn: char id ", iv[e], " is not in [0, ", V, ")");
  }
  for (int64_t t = 0; t < spans.numel(); ++t) {
    PD_CHECK(sv[t] >= 0 && sv[t] <= M, "char_cnn: span ", sv[t], " of token ", t, " is not in [0, ", M, "]");
  }
}

// The PAD windows' count into a token's max b and (when given) ties c, after its windows (count > 0).
inline void PadStep(const float* pad, float count, bool first, float* b, float* c, int64_t n) {
  if (c == nullptr) {
#pragma omp simd
    for (int64_t e = 0; e < n; ++e) {
      const float x = pad[e], best = b[e];
      b[e] = first | (x > best) | (x != x) ? x : best;
    }
    return;
  }
#pragma omp simd
  for (int64_t e = 0; e < n; ++e) {
    const float x = pad[e], best = b[e];
    const bool above = first | (x > best) | (x != x);
    const float tie = x == best ? count : 0.f;
    c[e] = above ? count : c[e] + tie;
    b[e] = above ? x : best;
  }
}

// The backward's max of a token, found again from its windows' products (rows k0 .. k1 of a
// block's x, m floats each) and its `pads` PAD windows (value pad) -> b [m], with the count c [m]
// of windows that reach it: the forward's steps in its order (the same bits), which the forward
// ran without the counts.
inline void TokenMax(const float* x, int64_t k0, int64_t k1, const float* pad, int64_t pads, int64_t m, float* b,
                     float* c) {
  for (int64_t k = k0; k < k1; ++k) MaxStep(x + k * m, k == k0, b, c, m);
  if (pads > 0) PadStep(pad, static_cast<float>(pads), k1 == k0, b, c, m);
}

// The filter's bias and activation on a token's max, in place: v = b + bias, then relu(v) when
// relu (Paddle's: v > 0 ? v : 0, NaN to 0), else v (another activation follows in Paddle's ops).
inline void BiasActivation(const float* bias, bool relu, float* b, int64_t m) {
#pragma omp simd
  for (int64_t e = 0; e < m; ++e) {
    const float v = b[e] + bias[e];
    b[e] = relu ? (v > 0.f ? v : 0.f) : v;
  }
}

// A window's product is the sum over its chars j of E[char j] W_j (W_j the rows j C .. j C + C of
// the width's weight): with the tables P_j = E W_j of the call's distinct chars (a few hundred, not
// the tens of thousands of windows), a product is w rows of the tables added, and the windows are
// never built. The backward goes the same way: with G_j the sum of the windows' gradients by their
// char j, grad W_j = E^T G_j and the chars' gradient sum_j G_j W_j^T. Threads take blocks of a
// width's columns, whose tables (and sums) stay in cache: the same sums on any number of threads.
// The products kept for the backward are stored a block at a time: columns s .. s + m (m =
// kCharColumns, less in the last block) of rows 0 .. R as R + 1 rows of m floats from x + s (R + 1).
constexpr int64_t kCharColumns = 64;

// The chars a call's windows read (and PAD, the PAD windows'): `chars` their ids, increasing, and
// `slots` [T, M] each char position's row among them.
struct CallChars {
  std::vector<int64_t> chars;
  std::vector<int32_t> slots;
  int32_t pad = 0;
};

CallChars ReadChars(const int64_t* ids, int64_t T, int64_t cols, int64_t M, int64_t V, int64_t pad_id) {
  std::vector<int32_t> slot(V, -1);
  slot[pad_id] = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < M; ++k) slot[ids[t * cols + k]] = 0;
  }
  CallChars out;
  for (int64_t v = 0; v < V; ++v) {
    if (slot[v] == 0) {
      slot[v] = static_cast<int32_t>(out.chars.size());
      out.chars.push_back(v);
    }
  }
  out.slots.resize(T * M);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t k = 0; k < M; ++k) out.slots[t * M + k] = slot[ids[t * cols + k]];
  }
  out.pad = slot[pad_id];
  return out;
}

// The call's chars' embeddings eu [U, C].
std::vector<float> CharRows(const CallChars& chars, const float* embed, int64_t C) {
  std::vector<float> eu(chars.chars.size() * C);
  for (size_t u = 0; u < chars.chars.size(); ++u) {
    std::memcpy(eu.data() + u * C, embed + chars.chars[u] * C, sizeof(float) * C);
  }
  return eu;
}

// The tables of one block of columns [s, s + m): tables [w, U, m], P_j[u] = eu[u] W_j[:, s .. s + m).
void CharTables(const float* eu, int64_t U, int64_t C, int64_t w, const float* weight, int64_t n, int64_t s, int64_t m,
                float* tables) {
  for (int64_t j = 0; j < w; ++j) {
    for (int64_t u = 0; u < U; ++u) {
      float* row = tables + (j * U + u) * m;
      std::fill(row, row + m, 0.f);
      for (int64_t ch = 0; ch < C; ++ch) {
        const float e_uc = eu[u * C + ch];
        const float* wr = weight + (j * C + ch) * n + s;
#pragma omp simd
        for (int64_t e = 0; e < m; ++e) row[e] += e_uc * wr[e];
      }
    }
  }
}

// out [m] = the sum over j of the tables' rows of the window's chars slots[0 .. w).
inline void WindowProduct(const float* tables, const int32_t* slots, int64_t U, int64_t w, int64_t m, float* out) {
  const float* first = tables + slots[0] * m;
#pragma omp simd
  for (int64_t e = 0; e < m; ++e) out[e] = first[e];
  for (int64_t j = 1; j < w; ++j) {
    const float* row = tables + (j * U + slots[j]) * m;
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) out[e] += row[e];
  }
}

// -> out and products written in place: out [T, N] = activation(max + bias) (BiasActivation), the
// widths side by side; products[i] [R_i + 1, n_i] (training: kept for the backward, a block of
// columns at a time) or [1, n_i] (inference: the PAD row only).
void CharCnn(const Tensor& ids_in, const Tensor& spans_in, const Tensor& embed_in, const std::vector<Tensor>& weights,
             const std::vector<Tensor>& biases, Tensor& out, std::vector<Tensor>& products, int64_t M, int64_t pad_id,
             bool relu) {
  const Tensor ids = ids_in.contiguous(), spans = spans_in.contiguous(), embed = embed_in.contiguous();
  CheckCharCnn(ids, spans, embed, weights, biases, M, pad_id);
  const int64_t T = ids.shape()[0], cols = ids.shape()[1], V = embed.shape()[0], C = embed.shape()[1];
  int64_t N = 0;
  for (const Tensor& weight : weights) N += weight.shape()[1];
  PD_CHECK(out.is_contiguous() && out.numel() == T * N && products.size() == weights.size(),
           "char_cnn: out [tokens, N] and one product per width, written in place");
  const int64_t* sv = spans.data<int64_t>();
  float* ov = out.data<float>();
  const CallChars chars = ReadChars(ids.data<int64_t>(), T, cols, M, V, pad_id);
  const int64_t U = static_cast<int64_t>(chars.chars.size());
  const std::vector<float> eu = CharRows(chars, embed.data<float>(), C);
  int64_t offset = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor weight = weights[i].contiguous(), bias = biases[i].contiguous();
    const int64_t K = weight.shape()[0], n = weight.shape()[1], w = K / C;
    const std::vector<int64_t> rows = WindowRows(sv, T, M, w);
    const bool save = products[i].numel() == (rows[T] + 1) * n;
    PD_CHECK(products[i].is_contiguous() && (save || products[i].numel() == n),
             "char_cnn: each product [windows + 1, n] or [1, n]");
    const int64_t n_blocks = (n + kCharColumns - 1) / kCharColumns;
    float* xv = products[i].data<float>();
#pragma omp parallel if (rows[T] * n >= kParallelMin)
    {
      AlignedFloats tables(w * U * kCharColumns);
      float value[kCharColumns], pad[kCharColumns];
#pragma omp for schedule(static, 1)
      for (int64_t block = 0; block < n_blocks; ++block) {
        const int64_t s = block * kCharColumns, m = std::min(kCharColumns, n - s);
        CharTables(eu.data(), U, C, w, weight.data<float>(), n, s, m, tables.data());
        std::vector<int32_t> pad_slots(w, chars.pad);
        WindowProduct(tables.data(), pad_slots.data(), U, w, m, pad);
        float* x = save ? xv + s * (rows[T] + 1) : nullptr;
        if (save) {
          std::memcpy(x + rows[T] * m, pad, sizeof(float) * m);
        } else {
          std::memcpy(xv + s, pad, sizeof(float) * m);
        }
        for (int64_t t = 0; t < T; ++t) {
          float* b = ov + t * N + offset + s;
          const int32_t* slots = chars.slots.data() + t * M;
          for (int64_t k = rows[t]; k < rows[t + 1]; ++k) {
            float* product = save ? x + k * m : value;
            WindowProduct(tables.data(), slots + (k - rows[t]), U, w, m, product);
            MaxStep(product, k == rows[t], b, nullptr, m);
          }
          const int64_t pads = M - w + 1 - (rows[t + 1] - rows[t]);
          if (pads > 0) PadStep(pad, static_cast<float>(pads), rows[t + 1] == rows[t], b, nullptr, m);
          BiasActivation(bias.data<float>() + s, relu, b, m);
        }
      }
    }
    offset += n;
  }
}

// One block of columns [s, s + m) of one width, from its products x (R + 1 rows of m floats): each
// token's max and ties found again (TokenMax), the output's gradient through the activation (the
// pre-activation's, gv [T, N]'s columns offset + s ..), summed over the tokens into the bias's
// gradient (grad_bias [m]), and the windows' gradients (split among the windows that reach the max
// as TensorFlow's reduce_max, the PAD row's over all the PAD windows of every token whose max they
// reach) summed by char and position into sums [w, U, m]; then grad W's rows' columns s .. s + m and
// this block's part [U, C] of the chars' gradient.
void CharBlockGradients(const std::vector<int64_t>& rows, const CallChars& chars, const float* eu, int64_t M,
                        int64_t w, int64_t C, const float* gv, int64_t N, int64_t offset, int64_t n, int64_t s,
                        int64_t m, const float* x, const float* weight, const float* bias, bool relu, float* sums,
                        float* grad_weight, float* grad_bias, float* part) {
  const int64_t T = static_cast<int64_t>(rows.size()) - 1, U = static_cast<int64_t>(chars.chars.size());
  std::fill(sums, sums + w * U * m, 0.f);
  std::fill(grad_bias, grad_bias + m, 0.f);
  const float* pad = x + rows[T] * m;
  float b[kCharColumns], c[kCharColumns], g[kCharColumns], share[kCharColumns], gk[kCharColumns];
  float pad_grad[kCharColumns] = {};
  for (int64_t t = 0; t < T; ++t) {
    const int64_t pads = M - w + 1 - (rows[t + 1] - rows[t]);
    TokenMax(x, rows[t], rows[t + 1], pad, pads, m, b, c);
    const float* grad = gv + t * N + offset + s;
    // relu's gradient as Paddle's: where the output (v > 0 ? v : 0, v = b + bias) is positive.
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) {
      g[e] = !relu || b[e] + bias[e] > 0.f ? grad[e] : 0.f;
      grad_bias[e] += g[e];
    }
    if (pads > 0) {
      const float count = static_cast<float>(pads);
#pragma omp simd
      for (int64_t e = 0; e < m; ++e) pad_grad[e] += pad[e] == b[e] ? g[e] * count / c[e] : 0.f;
    }
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) share[e] = g[e] / c[e];  // once a token, not once a window
    const int32_t* slots = chars.slots.data() + t * M;
    for (int64_t k = rows[t]; k < rows[t + 1]; ++k) {
      TieShare(x + k * m, b, share, gk, m);
      for (int64_t j = 0; j < w; ++j) {
        float* row = sums + (j * U + slots[k - rows[t] + j]) * m;
#pragma omp simd
        for (int64_t e = 0; e < m; ++e) row[e] += gk[e];
      }
    }
  }
  for (int64_t j = 0; j < w; ++j) {
    float* row = sums + (j * U + chars.pad) * m;
#pragma omp simd
    for (int64_t e = 0; e < m; ++e) row[e] += pad_grad[e];
  }
  // grad W_j [C, m] = E^T G_j, and part [U, C] = sum_j G_j W_j^T.
  std::fill(part, part + U * C, 0.f);
  for (int64_t j = 0; j < w; ++j) {
    const float* gj = sums + j * U * m;
    float* dw = grad_weight + j * C * n + s;
    for (int64_t ch = 0; ch < C; ++ch) std::fill(dw + ch * n, dw + ch * n + m, 0.f);
    for (int64_t u = 0; u < U; ++u) {
      for (int64_t ch = 0; ch < C; ++ch) {
        const float e_uc = eu[u * C + ch];
#pragma omp simd
        for (int64_t e = 0; e < m; ++e) dw[ch * n + e] += e_uc * gj[u * m + e];
      }
    }
    const float* wj = weight + j * C * n + s;
    for (int64_t u = 0; u < U; ++u) {
      for (int64_t ch = 0; ch < C; ++ch) {
        float dot = 0.f;
#pragma omp simd reduction(+ : dot)
        for (int64_t e = 0; e < m; ++e) dot += gj[u * m + e] * wj[ch * n + e];
        part[u * C + ch] += dot;
      }
    }
  }
}

// The gradient of CharCnn's out from grad [T, N] -> grad_embed [V, C] (row 0, the padding token's
// char, gets none, as nn.Embedding's padding_idx), grad_weights[i] [w_i * C, n_i] and
// grad_biases[i] [n_i], written in place (the products are read only).
void CharCnnBackward(const Tensor& ids_in, const Tensor& spans_in, const Tensor& embed_in,
                     const std::vector<Tensor>& weights, const std::vector<Tensor>& biases, const Tensor& grad_in,
                     std::vector<Tensor>& products, Tensor& grad_embed, std::vector<Tensor>& grad_weights,
                     std::vector<Tensor>& grad_biases, int64_t M, int64_t pad_id, bool relu) {
  const Tensor ids = ids_in.contiguous(), spans = spans_in.contiguous(), embed = embed_in.contiguous(),
               grad = grad_in.contiguous();
  const int64_t T = ids.shape()[0], cols = ids.shape()[1], V = embed.shape()[0], C = embed.shape()[1];
  int64_t N = 0;
  for (const Tensor& weight : weights) N += weight.shape()[1];
  PD_CHECK(grad.numel() == T * N && grad_embed.is_contiguous() && grad_embed.numel() == embed.numel() &&
               grad_weights.size() == weights.size() && grad_biases.size() == weights.size() &&
               biases.size() == weights.size() && products.size() == weights.size(),
           "char_cnn_backward: shapes disagree");
  const int64_t* sv = spans.data<int64_t>();
  const float* gv = grad.data<float>();
  const CallChars chars = ReadChars(ids.data<int64_t>(), T, cols, M, V, pad_id);
  const int64_t U = static_cast<int64_t>(chars.chars.size());
  const std::vector<float> eu = CharRows(chars, embed.data<float>(), C);
  std::vector<float> grad_chars(U * C, 0.f);
  int64_t offset = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const Tensor weight = weights[i].contiguous(), bias = biases[i].contiguous();
    const int64_t K = weight.shape()[0], n = weight.shape()[1], w = K / C;
    const std::vector<int64_t> rows = WindowRows(sv, T, M, w);
    PD_CHECK(products[i].numel() == (rows[T] + 1) * n && grad_weights[i].is_contiguous() &&
                 grad_weights[i].numel() == K * n && grad_biases[i].is_contiguous() && grad_biases[i].numel() == n,
             "char_cnn_backward: the forward's products (training), grad_weights [w * C, n] and grad_biases [n]");
    const float* xv = products[i].data<float>();
    const int64_t n_blocks = (n + kCharColumns - 1) / kCharColumns;
    std::vector<float> parts(n_blocks * U * C);
#pragma omp parallel if (rows[T] * n >= kParallelMin)
    {
      AlignedFloats sums(w * U * kCharColumns);
#pragma omp for schedule(static, 1)
      for (int64_t block = 0; block < n_blocks; ++block) {
        const int64_t s = block * kCharColumns;
        CharBlockGradients(rows, chars, eu.data(), M, w, C, gv, N, offset, n, s, std::min(kCharColumns, n - s),
                           xv + s * (rows[T] + 1), weight.data<float>(), bias.data<float>() + s, relu, sums.data(),
                           grad_weights[i].data<float>(), grad_biases[i].data<float>() + s,
                           parts.data() + block * U * C);
      }
    }
    for (int64_t block = 0; block < n_blocks; ++block) {
#pragma omp simd
      for (int64_t e = 0; e < U * C; ++e) grad_chars[e] += parts[block * U * C + e];
    }
    offset += n;
  }
  float* de = grad_embed.data<float>();
  std::fill(de, de + grad_embed.numel(), 0.f);
  for (int64_t u = 0; u < U; ++u) {
    if (chars.chars[u] != 0) std::memcpy(de + chars.chars[u] * C, grad_chars.data() + u * C, sizeof(float) * C);
  }
}

PD_BUILD_OP(elmo_char_cnn)
    .Inputs({"Ids", "Spans", "Embed", paddle::Vec("Weights"), paddle::Vec("Biases"), "Out", paddle::Vec("Products")})
    .Outputs({"OutOut", paddle::Vec("ProductsOut")})
    .Attrs({"max_chars: int64_t", "pad_id: int64_t", "relu: bool"})
    .SetInplaceMap({{"Out", "OutOut"}, {paddle::Vec("Products"), paddle::Vec("ProductsOut")}})
    .SetKernelFn(PD_KERNEL(CharCnn));

PD_BUILD_OP(elmo_char_cnn_backward)
    .Inputs({"Ids", "Spans", "Embed", paddle::Vec("Weights"), paddle::Vec("Biases"), "GradOut",
             paddle::Vec("Products"), "GradEmbed", paddle::Vec("GradWeights"), paddle::Vec("GradBiases")})
    .Outputs({paddle::Vec("ProductsOut"), "GradEmbedOut", paddle::Vec("GradWeightsOut"), paddle::Vec("GradBiasesOut")})
    .Attrs({"max_chars: int64_t", "pad_id: int64_t", "relu: bool"})
    .SetInplaceMap({{paddle::Vec("Products"), paddle::Vec("ProductsOut")}, {"GradEmbed", "GradEmbedOut"},
                    {paddle::Vec("GradWeights"), paddle::Vec("GradWeightsOut")},
                    {paddle::Vec("GradBiases"), paddle::Vec("GradBiasesOut")}})
    .SetKernelFn(PD_KERNEL(CharCnnBackward));

// Sampled-softmax cross-entropy per row. Row i's logits are its true logit followed by the C
// candidate logits cand[i] + cand_bias (the bias added here: Paddle's broadcast add is slow on
// CPU); labels[i] = 0 means the true column is the label, k > 0 means candidate k - 1 is the row's
// own target (an accidental hit): the label is that column and the true column is left out.
// Paddle's cross_entropy also needs the two concatenated into [n, C + 1]: slower here.

// One row: -> its log-sum-exp.
inline float RowLogSumExp(const float* row, const float* bias, int64_t C, float true_logit, int64_t label) {
  float top = label == 0 ? true_logit : row[0] + bias[0];
  // A NaN logit is skipped here but makes the sum below NaN. (std::fmax does not vectorise.)
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < C; ++j) top = row[j] + bias[j] > top ? row[j] + bias[j] : top;
  float sum = label == 0 ? Exp(true_logit - top) : 0.f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < C; ++j) sum += Exp(row[j] + bias[j] - top);
  return top + std::log(sum);
}

void CheckLabels(const int64_t* lv, int64_t n, int64_t C) {
  for (int64_t i = 0; i < n; ++i) PD_CHECK(lv[i] >= 0 && lv[i] <= C, "sampled_softmax_losses: label out of range");
}

// -> loss [n], lse [n] (log-sum-exp, for the backward), for lm.Softmax.full_losses.
std::vector<Tensor> SampledSoftmaxLoss(const Tensor& true_in, const Tensor& cand_in, const Tensor& bias_in,
                                       const Tensor& labels_in) {
  const Tensor true_logits = true_in.contiguous(), cand = cand_in.contiguous(), labels = labels_in.contiguous();
  const Tensor bias = bias_in.contiguous();
  PD_CHECK(cand.is_cpu() && cand.dtype() == paddle::DataType::FLOAT32 && cand.shape().size() == 2,
           "sampled_softmax_losses: float32 CPU candidate logits [n, C]");
  const int64_t n = cand.shape()[0], C = cand.shape()[1];
  PD_CHECK(true_logits.numel() == n && labels.numel() == n && labels.dtype() == paddle::DataType::INT64,
           "sampled_softmax_losses: true logits [n] and int64 labels [n]");
  PD_CHECK(bias.numel() == C, "sampled_softmax_losses: candidate bias [C]");
  Tensor loss = Empty({n});
  Tensor lse = Empty({n});
  const float *tv = true_logits.data<float>(), *cv = cand.data<float>(), *bv = bias.data<float>();
  const int64_t* lv = labels.data<int64_t>();
  float *loss_v = loss.data<float>(), *lse_v = lse.data<float>();
  CheckLabels(lv, n, C);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const int64_t label = lv[i];
    const float* row = cv + i * C;
    lse_v[i] = RowLogSumExp(row, bv, C, tv[i], label);
    loss_v[i] = lse_v[i] - (label == 0 ? tv[i] : row[label - 1] + bv[label - 1]);
  }
  return {loss, lse};
}

// Its gradient: softmax minus the label's one-hot, times the row's loss gradient.
std::vector<Tensor> SampledSoftmaxLossBackward(const Tensor& true_in, const Tensor& cand_in,
                                               const Tensor& bias_in, const Tensor& labels_in,
                                               const Tensor& lse, const Tensor& grad_in) {
  const Tensor true_logits = true_in.contiguous(), cand = cand_in.contiguous(), bias = bias_in.contiguous();
  const Tensor labels = labels_in.contiguous(), grad = grad_in.contiguous();
  const int64_t n = cand.shape()[0], C = cand.shape()[1];
  Tensor grad_true = Empty({n});
  Tensor grad_cand = Empty({n, C});
  Tensor grad_bias = Zeros({C});
  float* gb = grad_bias.data<float>();
  const float *tv = true_logits.data<float>(), *cv = cand.data<float>(), *bv = bias.data<float>();
  const float *lse_v = lse.data<float>(), *gv = grad.data<float>();
  const int64_t* lv = labels.data<int64_t>();
  float *dt = grad_true.data<float>(), *dc = grad_cand.data<float>();
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const float g = gv[i], l = lse_v[i];
    const float* row = cv + i * C;
    float* d = dc + i * C;
    dt[i] = lv[i] == 0 ? g * (Exp(tv[i] - l) - 1.f) : 0.f;
#pragma omp simd
    for (int64_t j = 0; j < C; ++j) d[j] = g * Exp(row[j] + bv[j] - l);
    if (lv[i] > 0) d[lv[i] - 1] -= g;
  }
  ColumnSums(dc, n, C, gb);
  return {grad_true, grad_cand, grad_bias};
}

PD_BUILD_OP(elmo_sampled_softmax_loss)
    .Inputs({"TrueLogits", "CandLogits", "CandBias", "Labels"})
    .Outputs({"Loss", "Lse"})
    .SetKernelFn(PD_KERNEL(SampledSoftmaxLoss));

PD_BUILD_OP(elmo_sampled_softmax_loss_backward)
    .Inputs({"TrueLogits", "CandLogits", "CandBias", "Labels", "Lse", "GradLoss"})
    .Outputs({"GradTrue", "GradCand", "GradCandBias"})
    .SetKernelFn(PD_KERNEL(SampledSoftmaxLossBackward));

// ---- The sampled softmax on a step's rows ---------------------------------------------------------
// lm.Softmax.sampled_loss's training loss in three calls: the forward in one (the candidate rows,
// the logits h W_cand^T and their exps, made block by block while in cache), the backward in two
// around the products that kernels.py runs with Paddle's matmul (G W_cand and G^T h), so that the
// true rows are never gathered into copies with gradients of their own (four gathers and four
// scatter-adds of [rows, P] a direction), the logits go through no elementwise op of Paddle, and
// the backward takes no exp: the forward leaves the exps in one [n, C] buffer and the backward
// turns them, in place, into the logits' gradient.
// The step's rows are read in place from the tables W [V, P] and b [V, 1]: the step's R rows are
// table rows `rows` [R], and positions among them name each target's and candidate's row (the rows'
// gradients are [R, ...], TableRows' values), so no gathered copy of the step's rows is made.
// Shapes: h [n, P]; w [V, P] and b [V, 1], the tables; index [2n + C + R], int64: true_pos [n] and
// cand_pos [C], positions in [0, R) (cand_pos distinct), then labels [n] as above, then rows [R],
// each position's table row; log_q [n + C], the log expected counts subtracted from the logits
// (log_q_true [n], then log_q_cand [C]). One array of each type: a call converts two arrays, not five.

// Rows of a table [R, ...] given by n int64 positions, each checked to be in [0, R).
void CheckPositions(const int64_t* pv, int64_t n, int64_t R, const char* name) {
  for (int64_t i = 0; i < n; ++i) {
    PD_CHECK(pv[i] >= 0 && pv[i] < R, name, " ", pv[i], " at position ", i, " is not in [0, ", R, ")");
  }
}

// The table rows of n positions among a step's rows (rows [R], each a row of a table of V rows):
// rows[pos[i]], the positions checked to be in [0, R) and the rows in [0, V).
std::vector<int64_t> TableRowsAt(const int64_t* pos, int64_t n, const int64_t* rows, int64_t R, int64_t V,
                                 const char* name) {
  CheckPositions(pos, n, R, name);
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = rows[pos[i]];
  CheckPositions(out.data(), n, V, name);
  return out;
}

// out[index[i]] += scale[i] * rows[i] for i in order (scale null: 1), rows [n, d], out [R, d], as
// Paddle's gather_grad adds them (ScatterAssignAdd). The threads take blocks of columns, so every
// element's sum runs in the same order: the same bits with repeated indices on any number of threads.
void AddRowsInOrder(const int64_t* index, int64_t n, const float* rows, const float* scale, int64_t d, float* out) {
  constexpr int64_t kColumns = 16;  // a thread's columns: one AVX-512 register of each row
#pragma omp parallel for if (n * d >= kParallelMin)
  for (int64_t start = 0; start < d; start += kColumns) {
    const int64_t end = std::min(d, start + kColumns);
    for (int64_t i = 0; i < n; ++i) {
      const float s = scale == nullptr ? 1.f : scale[i], *src = rows + i * d;
      float* row = out + index[i] * d;
#pragma omp simd
      for (int64_t j = start; j < end; ++j) row[j] += s * src[j];
    }
  }
}

// 2^y for y <= 0 (or NaN), the softmax's exp (its exponents are logits minus their row's max):
// y = n + r with n = round(y), so |r| <= 1/2 exactly (no two-part ln2 as Exp needs), a degree-6
// polynomial for 2^r (a least-squares fit of relative error; < 1.1e-7 evaluated in float) and 2^n
// added into its exponent bits instead of a multiply; y is clamped at -126 (2^-126, as Exp's clamp
// at -87, is nothing beside the row's largest term, 1). Fewer operations than Exp for the pass that
// is the softmax's largest cost after its product. NaN propagates.
inline float Exp2NonPositive(float y) {
  y = y < -126.f ? -126.f : y;
  const float n = (y + 12582912.f) - 12582912.f;  // round to nearest
  const float r = y - n;
  constexpr float kExp2Coefficients[] = {1.f, 6.931471825e-1f, 2.402264774e-1f, 5.550332367e-2f,
                                         9.618436918e-3f, 1.339887502e-3f, 1.535335905e-4f};
  const float m = Horner(r, kExp2Coefficients);
  int32_t bits;
  std::memcpy(&bits, &m, sizeof bits);
  bits += static_cast<int32_t>(n) << 23;  // n in [-126, 0]: m * 2^n stays a normal float
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// One row of the forward: the candidate logits v[j] = row[j] + bias[j] and the true logit (left out
// for an accidental hit, label > 0) -> row[j] = exp(v[j] - top), top the row's largest logit, in
// place; *true_exp = exp(true_logit - top) (0 for a hit), *sum = the true and candidate exps' sum.
// -> the log-sum-exp. The bias is added in the max pass and stored, so the exp pass reads one array.
inline float RowExps(float* row, const float* bias, int64_t C, float true_logit, int64_t label, float* true_exp,
                     float* sum_out) {
  float top = label == 0 ? true_logit : row[0] + bias[0];
  // A NaN logit is skipped here but makes the sum below NaN. (std::fmax does not vectorise.)
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < C; ++j) {
    const float v = row[j] + bias[j];
    row[j] = v;
    top = v > top ? v : top;
  }
  // exp(v - top) = 2^(v log2(e) + shift), shift = -top log2(e) rounded, the exponent one FMA. The
  // rounding, delta = top log2(e) + shift (exact by an FMA), is a factor 2^delta common to the row's
  // exps: the probabilities divide it out, and the log-sum-exp takes delta ln 2 off.
  constexpr float kLog2e = 1.44269504088896341f, kLn2 = 0.693147180559945309f;
  const float shift = -top * kLog2e, delta = std::fma(top, kLog2e, shift);
  *true_exp = label == 0 ? Exp2NonPositive(true_logit * kLog2e + shift) : 0.f;
  float sum = *true_exp;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < C; ++j) {
    const float e = Exp2NonPositive(row[j] * kLog2e + shift);
    row[j] = e;
    sum += e;
  }
  *sum_out = sum;
  return top + (std::log(sum) - delta * kLn2);
}

// Rows of the forward's product made at a time, each block on one thread: a block of logits (16 rows
// of the recipe's 8,192 candidates, half a megabyte) stays in a core's L2 cache from the product to the exps.
constexpr int64_t kSoftmaxBlockRows = 16;

Tensor CopyRows(const Tensor& x, const int64_t* index, int64_t n, const char* name);  // "Rows of a table" below

// Forward -> w_cand [C, P] (the candidates' rows of w, for the backward's products), exps [n, C] (exp(logit
// - the row's max) of the candidate logits: the probabilities times the row's sum), row_scale [n] (1 /
// that sum: the probabilities are exps * row_scale), loss [n] and true_prob [n] (the true column's
// probability, 0 for an accidental hit). With MKL each block of kSoftmaxBlockRows rows runs on one
// thread: its logits h_block w_cand^T by MKL's packed product (w_cand packed once) and then its exps,
// while the block is in that core's cache; without MKL, Paddle's matmul makes all the logits first.
// The backward folds row_scale into its pass over the exps (a pass fewer than normalising here).
std::vector<Tensor> SampledSoftmaxForward(const Tensor& h_in, const Tensor& w_in, const Tensor& b_in,
                                          const Tensor& index_in, const Tensor& log_q_in) {
  const Tensor h = h_in.contiguous(), w = w_in.contiguous(), b = b_in.contiguous();
  const Tensor index = index_in.contiguous(), log_q = log_q_in.contiguous();
  PD_CHECK(h.is_cpu() && h.dtype() == paddle::DataType::FLOAT32 && h.shape().size() == 2 && w.shape().size() == 2,
           "sampled_softmax: float32 CPU h [n, P], w [V, P], b [V, 1]");
  const int64_t n = h.shape()[0], C = log_q.numel() - n, R = index.numel() - 2 * n - C, P = h.shape()[1];
  const int64_t V = w.shape()[0];
  PD_CHECK(w.shape()[1] == P && b.numel() == V && C >= 0 && R >= 0 && index.dtype() == paddle::DataType::INT64 &&
               log_q.dtype() == paddle::DataType::FLOAT32,
           "sampled_softmax: shapes disagree");
  const int64_t *tp = index.data<int64_t>(), *cp = tp + n, *lv = cp + C, *rows = lv + n;
  const std::vector<int64_t> true_rows = TableRowsAt(tp, n, rows, R, V, "sampled_softmax: true row");
  const std::vector<int64_t> cand_rows = TableRowsAt(cp, C, rows, R, V, "sampled_softmax: candidate row");
  Tensor w_cand = CopyRows(w, cand_rows.data(), C, "sampled_softmax: candidate row");
  CheckLabels(lv, n, C);
  Tensor exps = Empty({n, C}), row_scale = Empty({n}), loss = Empty({n}), true_prob = Empty({n});
  const float *hv = h.data<float>(), *wv = w.data<float>(), *bv = b.data<float>();
  const float *lqt = log_q.data<float>(), *lqc = lqt + n;
  float *ev = exps.data<float>(), *scale_v = row_scale.data<float>(), *loss_v = loss.data<float>();
  float* tprob = true_prob.data<float>();
  std::vector<float> cand_bias(C);
  for (int64_t j = 0; j < C; ++j) cand_bias[j] = bv[cand_rows[j]] - lqc[j];
  const OneMklThread one_thread;  // packed and multiplied on one thread: the same bits on any number
  const RightMatrix cand(w_cand, true, kSoftmaxBlockRows);
#ifdef ELMO_MKL
  constexpr bool kProductPerBlock = true;
#else
  constexpr bool kProductPerBlock = false;  // RightMatrix runs Paddle's matmul: once, outside the threads
  cand.Multiply(hv, n, ev);
#endif
  const int64_t blocks = (n + kSoftmaxBlockRows - 1) / kSoftmaxBlockRows;
  // The default (static) schedule: a block must run exactly once, its pass is in place. With
  // schedule(dynamic), gcc's loop through libiomp5's GOMP interface ran the first block twice.
#pragma omp parallel for if (n * C >= kParallelMin)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t start = block * kSoftmaxBlockRows, end = std::min(n, start + kSoftmaxBlockRows);
    if (kProductPerBlock) cand.Multiply(hv + start * P, end - start, ev + start * C);  // on this thread
    for (int64_t i = start; i < end; ++i) {
      const float *hi = hv + i * P, *wi = wv + true_rows[i] * P;
      float dot = 0.f;
#pragma omp simd reduction(+ : dot)
      for (int64_t k = 0; k < P; ++k) dot += hi[k] * wi[k];
      const float true_logit = dot + bv[true_rows[i]] - lqt[i];
      float* row = ev + i * C;
      const int64_t label = lv[i];
      const float label_logit = label == 0 ? true_logit : row[label - 1] + cand_bias[label - 1];
      float true_exp, sum;
      loss_v[i] = RowExps(row, cand_bias.data(), C, true_logit, label, &true_exp, &sum) - label_logit;
      scale_v[i] = 1.f / sum;
      tprob[i] = true_exp * scale_v[i];
    }
  }
  return {w_cand, exps, row_scale, loss, true_prob};
}

// Backward, the loss gradient grad [n]: the forward's exps -> the logits' gradient grad_i * (p -
// one-hot), p = exps * row_scale, in place; grad_true [n] (the true logit's) and grad_cand_bias [C]
// (the candidate logits' column sums) written in place. The sums add fixed blocks of rows, then the
// blocks in order: the same bits on any number of threads.
void SampledSoftmaxLogitsBackward(Tensor& exps, const Tensor& row_scale, const Tensor& true_prob, const Tensor& index,
                                  const Tensor& grad_in, Tensor& grad_true, Tensor& grad_cand_bias) {
  const Tensor grad = grad_in.contiguous();
  const int64_t n = exps.shape()[0], C = exps.shape()[1];
  PD_CHECK(grad.numel() == n && row_scale.numel() == n && grad_true.numel() == n && grad_cand_bias.numel() == C &&
               index.numel() >= 2 * n + C,  // the rows follow
           "sampled_softmax_logits_backward: shapes disagree");
  constexpr int64_t kRows = 64;
  const int64_t blocks = (n + kRows - 1) / kRows;
  std::vector<float> partial(blocks * C, 0.f);
  const float *tprob = true_prob.data<float>(), *gv = grad.data<float>(), *scale_v = row_scale.data<float>();
  const int64_t* lv = index.data<int64_t>() + n + C;  // the labels
  float *pv = exps.data<float>(), *gt = grad_true.data<float>(), *gb = grad_cand_bias.data<float>();
#pragma omp parallel for
  for (int64_t block = 0; block < blocks; ++block) {
    float* sums = partial.data() + block * C;
    for (int64_t i = block * kRows; i < std::min(n, (block + 1) * kRows); ++i) {
      const float g = gv[i], scale = g * scale_v[i];
      float* row = pv + i * C;
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) row[j] *= scale;
      if (lv[i] > 0) row[lv[i] - 1] -= g;
#pragma omp simd
      for (int64_t j = 0; j < C; ++j) sums[j] += row[j];
      gt[i] = lv[i] == 0 ? g * (tprob[i] - 1.f) : 0.f;
    }
  }
  std::fill(gb, gb + C, 0.f);
  ColumnSums(partial.data(), blocks, C, gb);
}

// Backward, the rows: grad_h [n, P] (G W_cand, in place) += grad_true_i * w[rows[true_pos_i]] (w the
// table); grad_w [R, P] and grad_b [R, 1], the step's rows' (uninitialised, written in place): the
// candidates' rows get grad_cand_w [C, P] (G^T h) and grad_cand_bias, the other rows zeros (here, on
// the threads, rather than a zeroed allocation the candidates' rows then overwrite), then each true
// row adds grad_true_i * h_i and grad_true_i, i in order (AddRowsInOrder: the same bits on any number
// of threads).
void SampledSoftmaxRowsBackward(Tensor& grad_h, const Tensor& grad_cand_w_in, const Tensor& grad_true,
                                const Tensor& grad_cand_bias, const Tensor& h_in, const Tensor& w_in,
                                const Tensor& index, Tensor& grad_w, Tensor& grad_b) {
  const Tensor grad_cand_w = grad_cand_w_in.contiguous(), h = h_in.contiguous(), w = w_in.contiguous();
  const int64_t n = h.shape()[0], P = h.shape()[1], C = grad_cand_w.shape()[0], R = grad_w.shape()[0];
  PD_CHECK(grad_h.is_contiguous() && grad_h.numel() == n * P && grad_cand_w.numel() == C * P &&
               grad_w.is_contiguous() && grad_w.numel() == R * P && grad_b.numel() == R && w.shape()[1] == P &&
               index.numel() == 2 * n + C + R,
           "sampled_softmax_rows_backward: shapes disagree");
  const int64_t *tp = index.data<int64_t>(), *cp = tp + n, *rows = cp + C + n;
  const std::vector<int64_t> true_rows = TableRowsAt(tp, n, rows, R, w.shape()[0], "sampled_softmax: true row");
  const float *gt = grad_true.data<float>(), *gcb = grad_cand_bias.data<float>(), *gcw = grad_cand_w.data<float>();
  const float *hv = h.data<float>(), *wv = w.data<float>();
  float *gh = grad_h.data<float>(), *gw = grad_w.data<float>(), *gb = grad_b.data<float>();
#pragma omp parallel for if (n * P >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gt[i], *wi = wv + true_rows[i] * P;
    float* out = gh + i * P;
#pragma omp simd
    for (int64_t k = 0; k < P; ++k) out[k] += g * wi[k];
  }
  std::vector<int64_t> column(R, -1);  // each row's candidate, -1 for none
  for (int64_t j = 0; j < C; ++j) column[cp[j]] = j;
#pragma omp parallel for if (R * P >= kParallelMin)
  for (int64_t r = 0; r < R; ++r) {
    const int64_t j = column[r];
    if (j >= 0) {
      std::memcpy(gw + r * P, gcw + j * P, sizeof(float) * P);
    } else {
      std::memset(gw + r * P, 0, sizeof(float) * P);
    }
    gb[r] = j >= 0 ? gcb[j] : 0.f;
  }
  AddRowsInOrder(tp, n, hv, gt, P, gw);
  for (int64_t i = 0; i < n; ++i) gb[tp[i]] += gt[i];
}

PD_BUILD_OP(elmo_sampled_softmax_forward)
    .Inputs({"H", "W", "B", "Index", "LogQ"})
    .Outputs({"WCand", "Exps", "RowScale", "Loss", "TrueProb"})
    .SetKernelFn(PD_KERNEL(SampledSoftmaxForward));

PD_BUILD_OP(elmo_sampled_softmax_logits_backward)
    .Inputs({"Exps", "RowScale", "TrueProb", "Index", "GradLoss", "GradTrue", "GradCandBias"})
    .Outputs({"GradLogits", "GradTrueOut", "GradCandBiasOut"})
    .SetInplaceMap({{"Exps", "GradLogits"}, {"GradTrue", "GradTrueOut"}, {"GradCandBias", "GradCandBiasOut"}})
    .SetKernelFn(PD_KERNEL(SampledSoftmaxLogitsBackward));

PD_BUILD_OP(elmo_sampled_softmax_rows_backward)
    .Inputs({"GradH", "GradCandW", "GradTrue", "GradCandBias", "H", "W", "Index", "GradW", "GradB"})
    .Outputs({"GradHOut", "GradWOut", "GradBOut"})
    .SetInplaceMap({{"GradH", "GradHOut"}, {"GradW", "GradWOut"}, {"GradB", "GradBOut"}})
    .SetKernelFn(PD_KERNEL(SampledSoftmaxRowsBackward));

// The highway layer's gating (elmo.Highway), on the two products x W_carry and x W_transform:
// y = g * relu(t) + (1 - g) * x with g = sigmoid(carry + carry_bias), t = transform + transform_bias.
// As Paddle ops: two broadcast bias adds and six elementwise ops forward, more backward.
std::vector<Tensor> HighwayGate(const Tensor& carry_in, const Tensor& carry_bias_in, const Tensor& transform_in,
                                const Tensor& transform_bias_in, const Tensor& x_in) {
  const Tensor carry = carry_in.contiguous(), transform = transform_in.contiguous(), x = x_in.contiguous();
  const Tensor carry_bias = carry_bias_in.contiguous(), transform_bias = transform_bias_in.contiguous();
  PD_CHECK(x.is_cpu() && x.dtype() == paddle::DataType::FLOAT32 && x.shape().size() == 2,
           "highway kernel: float32 CPU [tokens, dim]");
  const int64_t rows = x.shape()[0], dim = x.shape()[1];
  PD_CHECK(carry.shape() == x.shape() && transform.shape() == x.shape() && carry_bias.numel() == dim &&
               transform_bias.numel() == dim,
           "highway kernel: carry and transform [tokens, dim], biases [dim]");
  Tensor y = Empty({rows, dim});
  const float *a = carry.data<float>(), *t = transform.data<float>(), *xv = x.data<float>();
  const float *bc = carry_bias.data<float>(), *bt = transform_bias.data<float>();
  float* yv = y.data<float>();
#pragma omp parallel for if (rows * dim >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = r * dim;
#pragma omp simd
    for (int64_t k = 0; k < dim; ++k) {
      const float g = Sigmoid(a[at + k] + bc[k]), tr = t[at + k] + bt[k];
      yv[at + k] = g * (tr > 0.f ? tr : 0.f) + (1.f - g) * xv[at + k];
    }
  }
  return {y};
}

// Inside a parallel region: this thread's contiguous share [start, end) of `cols` columns, in
// groups of 16 (a static schedule gives each thread one run of consecutive groups; all of them on
// one thread).
std::pair<int64_t, int64_t> ThreadColumns(int64_t cols) {
  constexpr int64_t kGroup = 16;
  int64_t start = cols, end = 0;
#pragma omp for schedule(static)
  for (int64_t group = 0; group < (cols + kGroup - 1) / kGroup; ++group) {
    start = std::min(start, group * kGroup);
    end = std::max(end, std::min(cols, group * kGroup + kGroup));
  }
  return {start, std::max(start, end)};
}

// Its gradients -> d carry, d carry_bias, d transform, d transform_bias, d x (the gating's part).
// Each thread takes a contiguous share of the columns (ThreadColumns) over all the rows in order, so
// that the biases' gradients are summed in the pass that makes d carry and d transform (ColumnSums'
// order and bits, without reading them again).
std::vector<Tensor> HighwayGateBackward(const Tensor& carry_in, const Tensor& carry_bias_in,
                                        const Tensor& transform_in, const Tensor& transform_bias_in,
                                        const Tensor& x_in, const Tensor& grad_in) {
  const Tensor carry = carry_in.contiguous(), transform = transform_in.contiguous(), x = x_in.contiguous();
  const Tensor carry_bias = carry_bias_in.contiguous(), transform_bias = transform_bias_in.contiguous();
  const Tensor grad = grad_in.contiguous();
  const int64_t rows = x.shape()[0], dim = x.shape()[1];
  Tensor d_carry = Empty({rows, dim}), d_transform = Empty({rows, dim}), d_x = Empty({rows, dim});
  Tensor d_carry_bias = Zeros({dim});
  Tensor d_transform_bias = Zeros({dim});
  const float *a = carry.data<float>(), *t = transform.data<float>(), *xv = x.data<float>();
  const float *bc = carry_bias.data<float>(), *bt = transform_bias.data<float>(), *dy = grad.data<float>();
  float *da = d_carry.data<float>(), *dt = d_transform.data<float>(), *dx = d_x.data<float>();
  float *dbc = d_carry_bias.data<float>(), *dbt = d_transform_bias.data<float>();
#pragma omp parallel if (rows * dim >= kParallelMin)
  {
    const std::pair<int64_t, int64_t> columns = ThreadColumns(dim);
    const int64_t start = columns.first, end = columns.second;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = r * dim;
#pragma omp simd
      for (int64_t k = start; k < end; ++k) {
        const float g = Sigmoid(a[at + k] + bc[k]), tr = t[at + k] + bt[k], d = dy[at + k];
        const float d_a = d * ((tr > 0.f ? tr : 0.f) - xv[at + k]) * g * (1.f - g);
        const float d_t = tr > 0.f ? d * g : 0.f;
        da[at + k] = d_a;
        dt[at + k] = d_t;
        dx[at + k] = d * (1.f - g);
        dbc[k] += d_a;
        dbt[k] += d_t;
      }
    }
  }
  return {d_carry, d_carry_bias, d_transform, d_transform_bias, d_x};
}

PD_BUILD_OP(elmo_highway_gate)
    .Inputs({"Carry", "CarryBias", "Transform", "TransformBias", "X"})
    .Outputs({"Y"})
    .SetKernelFn(PD_KERNEL(HighwayGate));

PD_BUILD_OP(elmo_highway_gate_backward)
    .Inputs({"Carry", "CarryBias", "Transform", "TransformBias", "X", "GradY"})
    .Outputs({"GradCarry", "GradCarryBias", "GradTransform", "GradTransformBias", "GradX"})
    .SetKernelFn(PD_KERNEL(HighwayGateBackward));

// ---- Rows of a table ----------------------------------------------------------------------------
// out[i] = x[index[i]] for x [R, d] (Paddle's gather on axis 0, which copies the rows on one
// thread), and its gradient: zeros [R, d], then grad[i] added to row index[i] for i in order, as
// Paddle's gather_grad adds them (AddRowsInOrder: the same bits with repeated indices, a step's targets).
// x[index] [n, d] for x [R, d] contiguous, the positions checked (`name` in the message).
Tensor CopyRows(const Tensor& x, const int64_t* iv, int64_t n, const char* name) {
  const int64_t R = x.shape()[0], d = x.shape()[1];
  CheckPositions(iv, n, R, name);
  Tensor out = Empty({n, d});
  const float* xv = x.data<float>();
  float* ov = out.data<float>();
#pragma omp parallel for if (n * d >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) std::memcpy(ov + i * d, xv + iv[i] * d, sizeof(float) * d);
  return out;
}

std::vector<Tensor> TakeRows(const Tensor& x_in, const Tensor& index_in) {
  const Tensor x = x_in.contiguous(), index = index_in.contiguous();
  PD_CHECK(x.is_cpu() && x.dtype() == paddle::DataType::FLOAT32 && x.shape().size() == 2 &&
               index.dtype() == paddle::DataType::INT64,
           "take_rows: float32 CPU x [R, d] and int64 indices");
  return {CopyRows(x, index.data<int64_t>(), index.numel(), "take_rows: index")};
}

std::vector<Tensor> TakeRowsBackward(const Tensor& index_in, const Tensor& grad_in, int64_t rows) {
  const Tensor index = index_in.contiguous(), grad = grad_in.contiguous();
  const int64_t n = index.numel(), d = grad.shape()[1];
  Tensor grad_x = Zeros({rows, d});
  AddRowsInOrder(index.data<int64_t>(), n, grad.data<float>(), nullptr, d, grad_x.data<float>());
  return {grad_x};
}

PD_BUILD_OP(elmo_take_rows)
    .Inputs({"X", "Index"})
    .Outputs({"Out"})
    .SetKernelFn(PD_KERNEL(TakeRows));

PD_BUILD_OP(elmo_take_rows_backward)
    .Inputs({"Index", "GradOut"})
    .Outputs({"GradX"})
    .Attrs({"rows: int64_t"})
    .SetKernelFn(PD_KERNEL(TakeRowsBackward));

// ---- Optimizer updates, in place --------------------------------------------------------------
// bilm-tf's Adagrad and the budget recipe's Adam over every parameter in one call, the global-norm
// clip's factor `scale` applied on the way (as Paddle ops: a scale, then the update, per tensor;
// and a gather, update and scatter for each table's rows). The arithmetic is Paddle's, operation
// for operation, contraction into FMAs off, with an exactly rounded sqrt: Paddle's adagrad kernel
// takes Eigen's fast sqrt in its vector body (an ulp off, processor-dependent), so some of an
// update's elements differ from it by an ulp (test_train_step.py, the fused-update test).
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

namespace {

// Adagrad (TF's ApplyAdagrad; Paddle's adagrad kernel with epsilon 0) on n elements.
inline void AdagradSpan(float* p, float* acc, const float* grad, int64_t n, float lr, float scale) {
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) {
    const float g = grad[k] * scale;
    acc[k] = acc[k] + g * g;
    p[k] = p[k] - lr * g / (std::sqrt(acc[k]) + 0.f);
  }
}

// Adam as optimizers.Adam's Paddle ops compute it: m = m b1 + g (1 - b1); v = v b2 + (g (1 - b2)) g;
// p -= (lr m) / (sqrt(v) + eps); c1 = 1 - b1 and c2 = 1 - b2 as the caller rounded them.
struct AdamArgs {
  float lr, scale, b1, c1, b2, c2, eps;
};

inline void AdamSpan(float* p, float* m, float* v, const float* grad, int64_t n, const AdamArgs& a) {
#pragma omp simd
  for (int64_t k = 0; k < n; ++k) {
    const float g = grad[k] * a.scale;
    m[k] = m[k] * a.b1 + g * a.c1;
    v[k] = v[k] * a.b2 + (g * a.c2) * g;
    p[k] = p[k] - (a.lr * m[k]) / (std::sqrt(v[k]) + a.eps);
  }
}

// A tensor the kernels write in place: float32, on the CPU and contiguous (a strided view would be
// copied by .contiguous() and the update lost), of `numel` elements.
void CheckWritable(const Tensor& t, int64_t numel, const char* name) {
  PD_CHECK(t.is_cpu() && t.dtype() == paddle::DataType::FLOAT32 && t.is_contiguous() && t.numel() == numel, name,
           ": parameters and optimizer slots must be contiguous float32 CPU tensors of the parameter's size");
}

void CheckSlots(const std::vector<Tensor>& params, const std::vector<std::vector<Tensor>*>& slots,
                const std::vector<Tensor>& grads, const char* name) {
  for (const auto* slot : slots) PD_CHECK(slot->size() == params.size(), name, ": one slot per parameter");
  PD_CHECK(grads.size() == params.size(), name, ": one gradient per parameter");
  for (size_t i = 0; i < params.size(); ++i) {
    CheckWritable(params[i], params[i].numel(), name);
    for (const auto* slot : slots) CheckWritable((*slot)[i], params[i].numel(), name);
    PD_CHECK(grads[i].is_cpu() && grads[i].dtype() == paddle::DataType::FLOAT32 && grads[i].is_contiguous() &&
                 grads[i].numel() == params[i].numel(),
             name, ": float32 CPU gradients of the parameters' sizes");
  }
}

// The tensors' data, taken once: a Tensor's data<float>() costs as much as updating a block of
// values, and the loops below would take it per block or per row.
std::vector<float*> Data(const std::vector<Tensor>& tensors) {
  std::vector<float*> data;
  for (const Tensor& t : tensors) data.push_back(const_cast<float*>(t.data<float>()));
  return data;
}

// update(tensor i, first element, elements) over kBlock-element blocks of every tensor of a list,
// in one parallel loop (a loop per tensor would fork and join once per parameter).
template <typename Update>
void ForEachBlock(const std::vector<Tensor>& tensors, Update update) {
  struct Block {
    size_t tensor;
    int64_t start, size;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < tensors.size(); ++i) {
    for (int64_t start = 0; start < tensors[i].numel(); start += kBlock) {
      blocks.push_back({i, start, std::min(kBlock, tensors[i].numel() - start)});
    }
  }
  const int64_t n = static_cast<int64_t>(blocks.size());
#pragma omp parallel for if (n * kBlock >= kParallelMin)
  for (int64_t b = 0; b < n; ++b) update(blocks[b].tensor, blocks[b].start, blocks[b].size);
}

// Rows `ids` (int64 [n]) of a table [V, d] and its slots, from gradient rows [n, d]. The ids must be
// distinct (TableRows' are: sorted unique), or two threads would update one row. update(arrays,
// first element, gradient row, d): arrays are the table's and its slots' data (Data).
template <typename Update>
void UpdateRows(Tensor& table, const std::vector<const Tensor*>& slots, const Tensor& ids_in, const Tensor& grad_in,
                const char* name, Update update) {
  const Tensor ids = ids_in.contiguous(), grad = grad_in.contiguous();
  CheckWritable(table, table.numel(), name);
  for (const Tensor* slot : slots) CheckWritable(*slot, table.numel(), name);
  PD_CHECK(ids.dtype() == paddle::DataType::INT64 && grad.dtype() == paddle::DataType::FLOAT32, name,
           ": int64 ids and float32 gradient rows");
  const int64_t n = ids.numel(), rows = table.shape()[0], d = rows ? table.numel() / rows : 0;
  PD_CHECK(grad.numel() == n * d, name, ": gradient rows [ids, row size]");
  const int64_t* iv = ids.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) PD_CHECK(iv[i] >= 0 && iv[i] < rows, name, ": row id out of range");
  const float* gv = grad.data<float>();
  std::vector<Tensor> tables{table};
  for (const Tensor* slot : slots) tables.push_back(*slot);
  const auto arrays = Data(tables);
#pragma omp parallel for if (n * d >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) update(arrays.data(), iv[i] * d, gv + i * d, d);
}

}  // namespace

void AdagradDense(std::vector<Tensor>& params, std::vector<Tensor>& accs, const std::vector<Tensor>& grads,
                  float lr, float scale) {
  CheckSlots(params, {&accs}, grads, "adagrad kernel");
  const auto p = Data(params), a = Data(accs), g = Data(grads);
  ForEachBlock(params, [&](size_t i, int64_t at, int64_t n) {
    AdagradSpan(p[i] + at, a[i] + at, g[i] + at, n, lr, scale);
  });
}

void AdagradRows(Tensor& table, Tensor& acc, const Tensor& ids, const Tensor& grad, float lr, float scale) {
  UpdateRows(table, {&acc}, ids, grad, "adagrad rows kernel", [&](float* const* rows, int64_t at, const float* g,
                                                                   int64_t d) {
    AdagradSpan(rows[0] + at, rows[1] + at, g, d, lr, scale);
  });
}

void AdamDense(std::vector<Tensor>& params, std::vector<Tensor>& ms, std::vector<Tensor>& vs,
               const std::vector<Tensor>& grads, float lr, float scale, float b1, float c1, float b2, float c2,
               float eps) {
  CheckSlots(params, {&ms, &vs}, grads, "adam kernel");
  const AdamArgs args{lr, scale, b1, c1, b2, c2, eps};
  const auto p = Data(params), m = Data(ms), v = Data(vs), g = Data(grads);
  ForEachBlock(params, [&](size_t i, int64_t at, int64_t n) {
    AdamSpan(p[i] + at, m[i] + at, v[i] + at, g[i] + at, n, args);
  });
}

void AdamRows(Tensor& table, Tensor& m, Tensor& v, const Tensor& ids, const Tensor& grad, float lr, float scale,
              float b1, float c1, float b2, float c2, float eps) {
  const AdamArgs args{lr, scale, b1, c1, b2, c2, eps};
  UpdateRows(table, {&m, &v}, ids, grad, "adam rows kernel", [&](float* const* rows, int64_t at, const float* g,
                                                                int64_t d) {
    AdamSpan(rows[0] + at, rows[1] + at, rows[2] + at, g, d, args);
  });
}

#pragma GCC pop_options

PD_BUILD_OP(elmo_adagrad_dense)
    .Inputs({paddle::Vec("Params"), paddle::Vec("Accs"), paddle::Vec("Grads")})
    .Outputs({paddle::Vec("ParamsOut"), paddle::Vec("AccsOut")})
    .Attrs({"lr: float", "scale: float"})
    .SetInplaceMap({{paddle::Vec("Params"), paddle::Vec("ParamsOut")}, {paddle::Vec("Accs"), paddle::Vec("AccsOut")}})
    .SetKernelFn(PD_KERNEL(AdagradDense));

PD_BUILD_OP(elmo_adagrad_rows)
    .Inputs({"Table", "Acc", "Ids", "Grad"})
    .Outputs({"TableOut", "AccOut"})
    .Attrs({"lr: float", "scale: float"})
    .SetInplaceMap({{"Table", "TableOut"}, {"Acc", "AccOut"}})
    .SetKernelFn(PD_KERNEL(AdagradRows));

PD_BUILD_OP(elmo_adam_dense)
    .Inputs({paddle::Vec("Params"), paddle::Vec("Ms"), paddle::Vec("Vs"), paddle::Vec("Grads")})
    .Outputs({paddle::Vec("ParamsOut"), paddle::Vec("MsOut"), paddle::Vec("VsOut")})
    .Attrs({"lr: float", "scale: float", "b1: float", "c1: float", "b2: float", "c2: float", "eps: float"})
    .SetInplaceMap({{paddle::Vec("Params"), paddle::Vec("ParamsOut")}, {paddle::Vec("Ms"), paddle::Vec("MsOut")},
                    {paddle::Vec("Vs"), paddle::Vec("VsOut")}})
    .SetKernelFn(PD_KERNEL(AdamDense));

PD_BUILD_OP(elmo_adam_rows)
    .Inputs({"Table", "M", "V", "Ids", "Grad"})
    .Outputs({"TableOut", "MOut", "VOut"})
    .Attrs({"lr: float", "scale: float", "b1: float", "c1: float", "b2: float", "c2: float", "eps: float"})
    .SetInplaceMap({{"Table", "TableOut"}, {"M", "MOut"}, {"V", "VOut"}})
    .SetKernelFn(PD_KERNEL(AdamRows));

// ---- Dropout ------------------------------------------------------------------------------------
// y = x * keep / (1 - p), keep = 1 where a hash of (seed, element index) is at least p. Paddle's CPU
// dropout draws each element from a Mersenne twister one at a time, on one thread; the hash is a
// counter-based generator (the murmur3 finaliser over a Weyl sequence), vectorised, and the
// backward regenerates the mask from the seed instead of storing it. The seed comes from Paddle's
// generator (kernels.py), so paddle.seed and checkpoints govern it as they governed Paddle's dropout.
std::vector<Tensor> Dropout(const Tensor& x_in, int64_t seed, float p) {
  const Tensor x = x_in.contiguous();
  PD_CHECK(x.is_cpu() && x.dtype() == paddle::DataType::FLOAT32, "dropout kernel: float32 CPU tensors");
  CheckDropout(x.numel(), p);
  Tensor y = Empty(x.shape());
  DropoutInto(x.data<float>(), x.numel(), 0, DropoutMask(seed, p), y.data<float>());
  return {y};
}

PD_BUILD_OP(elmo_dropout)
    .Inputs({"X"})
    .Outputs({"Y"})
    .Attrs({"seed: int64_t", "p: float"})
    .SetKernelFn(PD_KERNEL(Dropout));
