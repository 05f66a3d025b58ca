// Decompositions: how an op of kernels_cpu/op_list.def is split into several kernels, the way a
// streaming-MoE engine splits a layer (attention into KV append, scores, softmax, values and
// the output gate; an expert into a fused gate+up+SwiGLU kernel and the down matmul).
//
// A stage is an op of its own for manifests ("ops": ["attention_scores"]) with its own cases
// (its inputs are the f32-rounded truth of the stages before it, so a stage is judged alone).
// When a manifest covers every stage of a chain, `compare` also runs the stages back to back
// on the whole op's cases, each reading the previous one's device output, and decides the op's
// outputs with the op's bounds: the composition must compute the op. A kernel whose "ops" list
// is exactly a chain's stages (a fused kernel) runs on the op's cases directly.
//
// Stage kernels bind the stage op's tensor names and see the stage op's variables; `tensors`
// and `vars` translate them into the op's case (unlisted names pass through unchanged).
#pragma once
#include <map>
#include <string>
#include <vector>

namespace moe::compare {

struct ChainStage {
  std::string op;                               // the stage op a kernel must implement
  std::map<std::string, std::string> tensors;   // stage tensor name -> the op case's tensor name
  std::map<std::string, std::string> vars;      // stage variable -> expression over the op case's variables
};

struct Chain {
  std::string op;                  // the composite op (an op_list.def name)
  std::vector<ChainStage> stages;  // in dispatch order
};

const std::vector<Chain>& chains();
// The chain of `op`, or nullptr.
const Chain* find_chain(const std::string& op);
// Ops that exist only as stages (compare/manifest/stage_list.def): manifests may name them.
const std::vector<std::string>& stage_ops();

}  // namespace moe::compare
