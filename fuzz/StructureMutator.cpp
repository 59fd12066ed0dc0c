//===- StructureMutator.cpp - mutations of a module's structure ----------===//
//
// libFuzzer's byte mutations keep a kernel's text mostly well formed: they
// rarely produce a function with no body, an empty block, a block whose
// arguments disagree with the signature, or a Tile attribute on the wrong
// function, and those are what crashed every tool at parse time (issue 50).
// This mutator parses its input without verifying it, changes the structure
// (blocks, block arguments, signatures, terminators, bodies, attributes,
// types), and prints the result in generic form, which can express every
// such change. Inputs that do not parse get libFuzzer's own mutations.
//
// The mutated module must stay printable: no use may be left without its
// value and no branch without its block. Values that an erased op or block
// defined are replaced, where something else still uses them, by another
// value of the same type in the function or by a new entry-block argument
// (itself a signature mismatch worth fuzzing).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include "tile/InitTile.h"
#include "tile/Tools/ToolSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

using namespace mlir;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {
/// Mutations made in one context before it is replaced (it interns every
/// type and attribute it parses).
constexpr unsigned kMutationsPerContext = 2000;

class Mutator {
public:
  Mutator(ModuleOp module, unsigned seed) : module(module), random(seed) {}

  /// Applies one to three structural mutations; false if none applied.
  bool run() {
    collect();
    if (functions.empty() && blocks.empty())
      return false;
    bool any = false;
    unsigned count = 1 + pick(3);
    for (unsigned i = 0; i < count; ++i) {
      any |= mutateOnce();
      collect(); // what a mutation erased is gone from the lists
    }
    return any;
  }

private:
  ModuleOp module;
  std::mt19937 random;
  SmallVector<Operation *> functions; // ops with a function_type
  SmallVector<Block *> blocks;        // every block below the module
  SmallVector<Operation *> ops;       // every op below the module
  SmallVector<Type> types;

  unsigned pick(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(random);
  }
  template <typename T> T choose(ArrayRef<T> items) {
    return items[pick(items.size())];
  }

  void collect() {
    functions.clear();
    blocks.clear();
    ops.clear();
    types.clear();
    module->walk([&](Operation *op) {
      if (op == module.getOperation())
        return;
      ops.push_back(op);
      // Registered ops only: an unregistered op keeps its properties as one
      // dictionary, and removing an entry there leaves a null value that
      // MLIR's printer dereferences.
      if (op->isRegistered() && op->hasAttr("function_type"))
        functions.push_back(op);
      for (Type type : op->getResultTypes())
        types.push_back(type);
      for (Region &region : op->getRegions())
        for (Block &block : region) {
          blocks.push_back(&block);
          for (BlockArgument arg : block.getArguments())
            types.push_back(arg.getType());
        }
    });
    // Types no input need mention: wrong element types, ranks and scalars.
    MLIRContext *context = module.getContext();
    Type f32 = Float32Type::get(context);
    for (Type type :
         {Type(RankedTensorType::get(
              {ShapedType::kDynamic, ShapedType::kDynamic}, f32)),
          Type(RankedTensorType::get({ShapedType::kDynamic}, f32)),
          Type(RankedTensorType::get({2, 3, 4}, f32)),
          Type(RankedTensorType::get({ShapedType::kDynamic},
                                     BFloat16Type::get(context))),
          Type(RankedTensorType::get({4, 4}, Float64Type::get(context))),
          Type(UnrankedTensorType::get(f32)), f32,
          Type(IndexType::get(context)), Type(IntegerType::get(context, 1)),
          Type(RankedTensorType::get({ShapedType::kDynamic},
                                     IntegerType::get(context, 64)))})
      types.push_back(type);
  }

  /// The region of the function (or other isolated op) around `block`.
  static Region *functionRegion(Block *block) {
    Region *region = block->getParent();
    while (region->getParentOp() &&
           !region->getParentOp()->hasTrait<OpTrait::IsIsolatedFromAbove>())
      region = region->getParentOp()->getParentRegion();
    return region;
  }

  /// Whether `user` is inside what is being erased: one of `dying`'s
  /// blocks, or an op of `dyingOps` or nested in one.
  static bool isDying(Operation *user,
                      const llvm::SmallPtrSetImpl<Block *> &dying,
                      ArrayRef<Operation *> dyingOps) {
    for (Operation *op = user; op; op = op->getParentOp()) {
      if (dying.contains(op->getBlock()) || llvm::is_contained(dyingOps, op))
        return true;
    }
    return false;
  }

  /// A value of `type` to take the place of one about to disappear from
  /// `block`'s function: another value of that type in the function, or a
  /// new argument of its entry block. `dying` is what is being erased.
  Value substitute(Type type, Block *block,
                   const llvm::SmallPtrSetImpl<Block *> &dying,
                   ArrayRef<Operation *> dyingOps) {
    Region *region = functionRegion(block);
    SmallVector<Value> candidates;
    // Not below an isolated op (a function inside the module's region):
    // its values must not be used from outside it, or erasing its body
    // (toDeclaration) would leave those uses dangling.
    region->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op->hasTrait<OpTrait::IsIsolatedFromAbove>())
        return WalkResult::skip();
      if (!isDying(op, dying, dyingOps))
        for (Value result : op->getResults())
          if (result.getType() == type)
            candidates.push_back(result);
      return WalkResult::advance();
    });
    if (!candidates.empty() && pick(2))
      return choose<Value>(candidates);
    for (Block &entry : *region)
      if (!dying.contains(&entry))
        return entry.addArgument(type, UnknownLoc::get(type.getContext()));
    return {};
  }

  /// Gives each use of `value` outside what is being erased a substitute.
  /// False if none could be found (the mutation is then abandoned).
  bool redirectUses(Value value, Block *block,
                    const llvm::SmallPtrSetImpl<Block *> &dying,
                    ArrayRef<Operation *> dyingOps) {
    for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
      if (isDying(use.getOwner(), dying, dyingOps))
        continue;
      Value replacement = substitute(value.getType(), block, dying, dyingOps);
      if (!replacement)
        return false;
      use.set(replacement);
    }
    return true;
  }

  /// Erases `victims`, ops of one block, after redirecting what outlives
  /// them.
  bool eraseOps(ArrayRef<Operation *> victims) {
    llvm::SmallPtrSet<Block *, 4> noBlocks;
    for (Operation *op : victims) {
      bool ok = true;
      op->walk([&](Operation *inner) {
        for (Value result : inner->getResults())
          ok &= redirectUses(result, op->getBlock(), noBlocks, victims);
      });
      if (!ok)
        return false;
    }
    for (Operation *op : victims)
      op->dropAllReferences();
    for (Operation *op : victims) {
      op->dropAllUses();
      op->erase();
    }
    return true;
  }

  bool eraseBlock(Block *block) {
    llvm::SmallPtrSet<Block *, 4> dying;
    dying.insert(block);
    block->walk([&](Operation *op) {
      for (Region &region : op->getRegions())
        for (Block &inner : region)
          dying.insert(&inner);
    });
    SmallVector<Operation *> none;
    for (BlockArgument arg : block->getArguments())
      if (!redirectUses(arg, block, dying, none))
        return false;
    bool ok = true;
    block->walk([&](Operation *op) {
      for (Value result : op->getResults())
        ok &= redirectUses(result, block, dying, none);
    });
    if (!ok)
      return false;
    for (Operation &op : *block)
      op.dropAllReferences();
    // Branches from other blocks go to a neighbour instead (there is one:
    // they are in it).
    Block *other = nullptr;
    for (Block &candidate : *block->getParent())
      if (&candidate != block)
        other = &candidate;
    if (!block->use_empty())
      block->replaceAllUsesWith(other);
    block->dropAllDefinedValueUses();
    block->erase();
    return true;
  }

  bool duplicateBlock(Block *block) {
    IRMapping mapping;
    auto *copy = new Block();
    for (BlockArgument arg : block->getArguments())
      mapping.map(arg, copy->addArgument(arg.getType(), arg.getLoc()));
    block->getParent()->getBlocks().insertAfter(Region::iterator(block), copy);
    for (Operation &op : *block)
      copy->push_back(op.clone(mapping));
    return true;
  }

  bool changeBlockArguments(Block *block) {
    switch (pick(3)) {
    case 0:
      block->insertArgument(pick(block->getNumArguments() + 1),
                            choose<Type>(types),
                            UnknownLoc::get(module.getContext()));
      return true;
    case 1: {
      if (block->getNumArguments() == 0)
        return false;
      unsigned index = pick(block->getNumArguments());
      llvm::SmallPtrSet<Block *, 1> noBlocks;
      BlockArgument arg = block->getArgument(index);
      // Uses go to another value; the argument is then unused.
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Value replacement;
        for (BlockArgument other : block->getArguments())
          if (other != arg && other.getType() == arg.getType())
            replacement = other;
        if (!replacement) {
          for (Operation &op : *block)
            for (Value result : op.getResults())
              if (result.getType() == arg.getType() && !replacement)
                replacement = result;
        }
        if (!replacement)
          return false;
        use.set(replacement);
      }
      block->eraseArgument(index);
      return true;
    }
    default:
      if (block->getNumArguments() == 0)
        return false;
      block->getArgument(pick(block->getNumArguments()))
          .setType(choose<Type>(types));
      return true;
    }
  }

  bool changeSignature(Operation *function) {
    auto typeAttr = dyn_cast<TypeAttr>(function->getAttr("function_type"));
    auto type =
        typeAttr ? dyn_cast<FunctionType>(typeAttr.getValue()) : FunctionType();
    if (!type)
      return false;
    SmallVector<Type> inputs(type.getInputs()), results(type.getResults());
    SmallVector<Type> &list = pick(2) ? inputs : results;
    switch (pick(4)) {
    case 0:
      if (list.empty())
        return false;
      list.erase(list.begin() + pick(list.size()));
      break;
    case 1:
      list.insert(list.begin() + pick(list.size() + 1), choose<Type>(types));
      break;
    case 2:
      if (list.empty())
        return false;
      list[pick(list.size())] = choose<Type>(types);
      break;
    default:
      if (list.size() < 2)
        return false;
      std::swap(list[pick(list.size())], list[pick(list.size())]);
    }
    function->setAttr(
        "function_type",
        TypeAttr::get(FunctionType::get(module.getContext(), inputs, results)));
    return true;
  }

  bool changeTerminator(Block *block) {
    if (block->empty())
      return false;
    Operation *last = &block->back();
    switch (pick(3)) {
    case 0:
      return eraseOps({last});
    case 1: // the terminator first, the rest after it
      last->moveBefore(&block->front());
      return true;
    default: { // the terminator swapped with another op
      if (block->getOperations().size() < 2)
        return false;
      auto it = block->begin();
      std::advance(it, pick(block->getOperations().size() - 1));
      last->moveBefore(&*it);
      return true;
    }
    }
  }

  bool toDeclaration(Operation *function) {
    if (function->getNumRegions() == 0 || function->getRegion(0).empty())
      return false;
    Region &body = function->getRegion(0);
    // A value of the body used outside the function (unregistered ops are
    // not isolated from above) would dangle: give up instead.
    bool usedOutside = false;
    body.walk([&](Operation *op) {
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          usedOutside |= !function->isProperAncestor(user);
    });
    for (Block &block : body)
      for (BlockArgument arg : block.getArguments())
        for (Operation *user : arg.getUsers())
          usedOutside |= !function->isProperAncestor(user);
    if (usedOutside)
      return false;
    body.dropAllReferences();
    body.getBlocks().clear();
    if (pick(2))
      function->setAttr("sym_visibility",
                        StringAttr::get(module.getContext(), "private"));
    return true;
  }

  /// A `tile.` attribute of one op (or of a function's arguments or
  /// results) put on another, moved or copied.
  bool moveTileAttribute() {
    SmallVector<std::pair<Operation *, NamedAttribute>> found;
    for (Operation *op : ops)
      for (NamedAttribute attr : op->getDiscardableAttrs())
        if (attr.getName().getValue().starts_with("tile."))
          found.push_back({op, attr});
    MLIRContext *context = module.getContext();
    NamedAttribute attr(StringAttr::get(context, "tile.kernel"),
                        UnitAttr::get(context));
    Operation *from = nullptr;
    if (!found.empty() && pick(4)) {
      std::tie(from, attr) = found[pick(found.size())];
    }
    Operation *to = pick(2) && !functions.empty()
                        ? choose<Operation *>(functions)
                        : choose<Operation *>(ops);
    if (from && pick(2))
      from->removeAttr(attr.getName());
    to->setAttr(attr.getName(), attr.getValue());
    return true;
  }

  /// A function's argument or result attributes swapped between positions
  /// or functions (tile.nograd, tile.cotangent, tile.saved, ...).
  bool moveArgumentAttributes() {
    if (functions.empty())
      return false;
    Operation *from = choose<Operation *>(functions);
    Operation *to = choose<Operation *>(functions);
    StringRef name = pick(2) ? "arg_attrs" : "res_attrs";
    Attribute attrs = from->getAttr(name);
    if (!attrs)
      return false;
    to->setAttr(name, attrs);
    if (from != to && pick(2))
      from->removeAttr(name);
    return true;
  }

  bool cloneFunction(Operation *function) {
    OpBuilder builder(function);
    builder.setInsertionPointAfter(function);
    builder.clone(*function);
    return true;
  }

  bool mutateOnce() {
    switch (pick(12)) {
    case 0:
      return !blocks.empty() && eraseBlock(choose<Block *>(blocks));
    case 1:
      return !blocks.empty() && duplicateBlock(choose<Block *>(blocks));
    case 2: { // an empty block
      if (blocks.empty())
        return false;
      Block *block = choose<Block *>(blocks);
      SmallVector<Operation *> all;
      for (Operation &op : *block)
        all.push_back(&op);
      return eraseOps(all);
    }
    case 3:
      return !blocks.empty() && changeBlockArguments(choose<Block *>(blocks));
    case 4:
      return !functions.empty() &&
             changeSignature(choose<Operation *>(functions));
    case 5:
      return !blocks.empty() && changeTerminator(choose<Block *>(blocks));
    case 6:
      return !functions.empty() &&
             toDeclaration(choose<Operation *>(functions));
    case 7:
      return !ops.empty() && moveTileAttribute();
    case 8:
      return moveArgumentAttributes();
    case 9:
      return !functions.empty() &&
             cloneFunction(choose<Operation *>(functions));
    case 10: { // an op's result retyped
      SmallVector<OpResult> results;
      for (Operation *op : ops)
        for (OpResult result : op->getResults())
          results.push_back(result);
      if (results.empty())
        return false;
      choose<OpResult>(results).setType(choose<Type>(types));
      return true;
    }
    default: { // an op erased, its uses given other values
      SmallVector<Operation *> candidates;
      for (Operation *op : ops)
        if (!op->hasAttr("function_type"))
          candidates.push_back(op);
      return !candidates.empty() && eraseOps({choose<Operation *>(candidates)});
    }
    }
  }
};

struct MutatorContext {
  std::unique_ptr<MLIRContext> context;
  unsigned uses = 0;

  MLIRContext &get() {
    if (context && ++uses <= kMutationsPerContext)
      return *context;
    DialectRegistry registry;
    mlir::tile::registerTileDialects(registry);
    context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    // Ops of dialects the tools do not know are still structure to mutate.
    context->allowUnregisteredDialects();
    context->getDiagEngine().registerHandler(
        [](Diagnostic &) { return success(); });
    uses = 1;
    return *context;
  }
};
MutatorContext mutatorContext;
} // namespace

namespace tile::fuzz {
namespace {
size_t mutateOnLargeStack(uint8_t *data, size_t size, size_t maxSize,
                          unsigned seed);
} // namespace

size_t mutateStructure(uint8_t *data, size_t size, size_t maxSize,
                       unsigned seed) {
  // Parsing and printing recurse as deep as the input nests: the tools'
  // stack, as for the harnesses.
  size_t result = 0;
  mlir::tile::runWithLargeStack([&] {
    result = mutateOnLargeStack(data, size, maxSize, seed);
    return 0;
  });
  return result;
}

namespace {
size_t mutateOnLargeStack(uint8_t *data, size_t size, size_t maxSize,
                          unsigned seed) {
  // Half the time, and whenever the structure cannot be read, libFuzzer's
  // byte mutations (which also reach the lexer and the parser).
  if (seed % 2 == 0)
    return LLVMFuzzerMutate(data, size, maxSize);
  llvm::StringRef input(reinterpret_cast<const char *>(data), size);
  // A crash in the mutator itself leaves no input behind; with
  // TILE_FUZZ_MUTATOR_TRACE=FILE each input is written there first, and
  // the seed printed, so that the last one reproduces it.
  if (const char *trace = std::getenv("TILE_FUZZ_MUTATOR_TRACE")) {
    if (FILE *file = std::fopen(trace, "wb")) {
      std::fwrite(data, 1, size, file);
      std::fprintf(file, "\n// mutator seed %u\n", seed);
      std::fclose(file);
    }
  }
  if (mlir::tile::findUnparsableInput(input))
    return LLVMFuzzerMutate(data, size, maxSize);
  std::string text;
  {
    MLIRContext &context = mutatorContext.get();
    ParserConfig config(&context, /*verifyAfterParse=*/false);
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(input, config);
    if (!module || !Mutator(*module, seed / 2).run())
      return LLVMFuzzerMutate(data, size, maxSize);
    llvm::raw_string_ostream os(text);
    module->print(os, OpPrintingFlags().printGenericOpForm());
  }
  if (text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

} // namespace

} // namespace tile::fuzz
