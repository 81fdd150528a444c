// dnnlrounds runs ROUNDS rounds of two oneDNN primitives: a 512x512 matmul and a tanh
// eltwise over 1 M floats. oneDNN reports each primitive it runs as an ITT task named by its
// kind, and its JIT kernels through the JIT Profiling API.
#include <cstdio>
#include <cstdlib>

#include "oneapi/dnnl/dnnl.hpp"

using namespace dnnl;

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	engine eng(engine::kind::cpu, 0);
	stream s(eng);
	const memory::dim M = 512, K = 512, N = 512;
	memory::desc a_md({M, K}, memory::data_type::f32, memory::format_tag::ab);
	memory::desc b_md({K, N}, memory::data_type::f32, memory::format_tag::ab);
	memory::desc c_md({M, N}, memory::data_type::f32, memory::format_tag::ab);
	memory a(a_md, eng), b(b_md, eng), c(c_md, eng), d(c_md, eng);
	float *pa = (float *)a.get_data_handle(), *pb = (float *)b.get_data_handle();
	for (int i = 0; i < M * K; i++) pa[i] = (i % 7) - 3;
	for (int i = 0; i < K * N; i++) pb[i] = (i % 5) - 2;
	auto mm_pd = matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), eng);
	matmul mm(mm_pd);
	const memory::dim E = 1 << 20;
	memory::desc e_md({E}, memory::data_type::f32, memory::format_tag::a);
	memory e_src(e_md, eng), e_dst(e_md, eng);
	auto el_pd = eltwise_forward::primitive_desc(
		eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_tanh, e_md, 0.f, 0.f), eng);
	eltwise_forward el(el_pd);
	for (int r = 0; r < rounds; r++) {
		mm.execute(s, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
		el.execute(s, {{DNNL_ARG_SRC, e_src}, {DNNL_ARG_DST, e_dst}});
		s.wait();
	}
	printf("done %d rounds\n", rounds);
	return 0;
}
