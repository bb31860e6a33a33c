// Tables: posenc on every path, the sincos peers on the same shapes and layout, and memset of the same
// output buffer as the bound.
#include <cstring>
#include <memory>

#include "buffers.hpp"
#include "cases.hpp"
#include "harness.hpp"
#include "peers/peers.hpp"

namespace bench {
namespace {

bool is_slow(const Plan &plan, const Shape &s) {
  for (const Shape &t : plan.table_slow)
    if (t.d == s.d && t.n == s.n) return true;
  return false;
}

Case table_case(const char *kernel, const std::string &impl, const Shape &s, size_t elem_size) {
  Case c = make_case(kernel, impl, s.d, s.n, double(elem_size));
  if (s.first != 0) c.extra = {{"first", std::to_string(s.first)}};
  return c;
}

// The memset bound on the same bytes as the table.
void add_memset(const char *kernel, const Shape &s, size_t elem_size, const char *pos_kind = nullptr) {
  Case c = table_case(kernel, "memset", s, elem_size);
  if (pos_kind) c.extra.push_back({"pos", pos_kind});
  c.prepare = [bytes = size_t(c.bytes)] {
    void *out = buffer("out", bytes);
    return Work([out, bytes] {
      std::memset(out, 0, bytes);
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

// The store bound: the same bytes written with plain vector stores of one value (the widest ISA this CPU
// runs), what posenc would take if its arithmetic were free.
void add_stores(const Shape &s) {
  Case c = table_case("table_f32", "stores", s, sizeof(float));
  c.prepare = [s, fill = peers::best_passes().fill] {
    float *out = buffer_of<float>("out", s.d * s.n);
    return Work([out, s, fill] {
      fill(out, 0.5f, s.d * s.n);  // through a pointer into another unit: not turned into memset
      return POSENC_OK;
    });
  };
  add(std::move(c));
}

// Every table peer on the rows of `positions` (or 0, 1, ...).
void add_peers(const char *kernel, const Shape &s, const char *pos_kind, bool slow_too) {
  for (const peers::TablePeer &peer : peers::table_peers()) {
    if (peer.needs == POSENC_ISA_SCALAR && !slow_too) continue;
    Case c = table_case(kernel, peer.name, s, sizeof(float));
    if (pos_kind) c.extra.push_back({"pos", pos_kind});
    c.isa = peer.needs;
    c.prepare = [fn = peer.fn, s, pos_kind] {
      auto freqs = std::make_shared<peers::Freqs>(posenc_spec_default(s.d));
      float *out = buffer_of<float>("out", s.d * s.n);
      const int64_t *pos = pos_kind ? positions(pos_kind, s.n) : nullptr;
      return Work([fn, freqs, out, pos, s] {
        fn(*freqs, pos, s.first, s.n, out, s.d);
        return POSENC_OK;
      });
    };
    add(std::move(c));
  }
}

template <class T>
using TableCall = posenc_status (*)(const posenc_spec *, int64_t, int64_t, T *, int64_t);

template <class T>
void add_posenc_table(const char *kernel, TableCall<T> call, const Shape &s, bool slow_too) {
  for (posenc_isa isa : paths()) {
    if (isa == POSENC_ISA_SCALAR && !slow_too) continue;
    Case c = on_path(isa, table_case(kernel, posenc_isa_name(isa), s, sizeof(T)));
    c.prepare = [call, s] {
      const posenc_spec spec = posenc_spec_default(s.d);
      T *out = buffer_of<T>("out", s.d * s.n);
      return Work([call, spec, out, s] { return call(&spec, s.first, s.n, out, s.d); });
    };
    add(std::move(c));
  }
}

void add_posenc_rows(const Shape &s, const char *pos_kind) {
  for (posenc_isa isa : paths()) {
    Case c = on_path(isa, table_case("rows_f32", posenc_isa_name(isa), s, sizeof(float)));
    c.extra.push_back({"pos", pos_kind});
    c.prepare = [s, pos_kind] {
      const posenc_spec spec = posenc_spec_default(s.d);
      float *out = buffer_of<float>("out", s.d * s.n);
      const int64_t *pos = positions(pos_kind, s.n);
      return Work([spec, out, pos, s] { return posenc_rows_f32(&spec, pos, s.n, out, s.d); });
    };
    add(std::move(c));
  }
}

}  // namespace

void add_table_cases(const Plan &plan) {
  for (const Shape &s : plan.table) {
    const bool slow = is_slow(plan, s);
    add_posenc_table<float>("table_f32", posenc_table_f32, s, slow);
    add_peers("table_f32", s, nullptr, slow);
    add_memset("table_f32", s, sizeof(float));
    add_stores(s);
  }
  for (const Shape &s : plan.half) {
    add_posenc_table<uint16_t>("table_bf16", posenc_table_bf16, s, true);
    add_posenc_table<uint16_t>("table_f16", posenc_table_f16, s, true);
    add_memset("table_bf16", s, sizeof(uint16_t));
    add_memset("table_f16", s, sizeof(uint16_t));
  }
  for (const Shape &s : plan.rows) {
    for (const char *kind : {"packed", "scattered"}) {
      add_posenc_rows(s, kind);
      add_peers("rows_f32", s, kind, false);
      add_memset("rows_f32", s, sizeof(float), kind);
    }
  }
  // A decode step: posenc makes the values once for the run of equal positions, while the peers compute
  // every row as they would for scattered positions (a runtime might instead index a precomputed table):
  // these ratios measure that sharing as much as the arithmetic. posenc's own pos=scattered rows are the
  // like-for-like comparison.
  for (const Shape &s : plan.rows_step) {
    add_posenc_rows(s, "step");
    add_peers("rows_f32", s, "step", false);
    add_memset("rows_f32", s, sizeof(float), "step");
  }
}

}  // namespace bench
