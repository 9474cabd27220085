; ---- Loom pointwise kernel e1_relu_scale_bias (from "e1_relu_scale_bias"), LLVM IR for the host ----
; host schedule: 16 lanes per vector; 32 tasks of 32768
; bytes per element: 8; parameters: 32 bytes (pack_params)
; space: rank 1, 32-bit indices in the parameters
; in0: input 0, float32, contiguous
; out0: float32, contiguous
; scalars: float32, float32
; entry point: @e1_relu_scale_bias(params, begin, end), one call per task

; elements [begin, end) of the iteration space
define void @e1_relu_scale_bias(ptr noalias readonly %p, i64 %begin, i64 %end) #0 {
entry:
  %e.slot = alloca i64
  %j.slot = alloca i64
  %k.slot = alloca i64
  ; parameters (the packed struct of pack_params)
  %in0.at = getelementptr inbounds i8, ptr %p, i64 0
  %in0 = load ptr, ptr %in0.at, align 8                                      ; input 0 float32, contiguous (test_llvm_golden.cpp:86)
  %out0.at = getelementptr inbounds i8, ptr %p, i64 8
  %out0 = load ptr, ptr %out0.at, align 8                                    ; output 0, contiguous
  %n.at = getelementptr inbounds i8, ptr %p, i64 16
  %n = load i32, ptr %n.at, align 4                                          ; elements of the iteration space
  %n.i64 = sext i32 %n to i64
  %s0.at = getelementptr inbounds i8, ptr %p, i64 20
  %s0 = load float, ptr %s0.at, align 4                                      ; scalar float32 (test_llvm_golden.cpp:86)
  %s1.at = getelementptr inbounds i8, ptr %p, i64 24
  %s1 = load float, ptr %s1.at, align 4                                      ; scalar float32 (test_llvm_golden.cpp:86)
  ; the task's first element as a multi-index of the iteration space
  store i64 %begin, ptr %e.slot
  store i64 %begin, ptr %j.slot
  br label %row
row:
  %e = load i64, ptr %e.slot
  %j = load i64, ptr %j.slot
  %left = sub i64 %end, %e
  %jend = add i64 %j, %left
  store i64 %j, ptr %k.slot
  ; vector steps: 16 elements per operand at once
  br label %vector.cond
vector.cond:
  %vector = load i64, ptr %k.slot
  %k.next = add i64 %vector, 16
  %more = icmp ule i64 %k.next, %jend                                        ; a whole vector of 16 elements left
  br i1 %more, label %vector.body, label %vector.done
vector.body:
  %v0.p = getelementptr inbounds float, ptr %in0, i64 %vector
  %v0.m = load <16 x float>, ptr %v0.p, align 4                              ; load in0: float32 (contiguous, test_llvm_golden.cpp:86)
  %v1.ins = insertelement <16 x float> poison, float %s0, i64 0
  %v1 = shufflevector <16 x float> %v1.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %v2 = fmul <16 x float> %v0.m, %v1                                         ; mul (test_llvm_golden.cpp:86)
  %v3.ins = insertelement <16 x float> poison, float %s1, i64 0
  %v3 = shufflevector <16 x float> %v3.ins, <16 x float> poison, <16 x i32> zeroinitializer
  %v4 = fadd <16 x float> %v2, %v3                                           ; add (test_llvm_golden.cpp:86)
  %v5.keep = fcmp ugt <16 x float> %v4, zeroinitializer
  %v5 = select <16 x i1> %v5.keep, <16 x float> %v4, <16 x float> zeroinitializer ; relu (test_llvm_golden.cpp:86)
  %out0.p = getelementptr inbounds float, ptr %out0, i64 %vector
  store <16 x float> %v5, ptr %out0.p, align 4                               ; store out0 (float32)
  store i64 %k.next, ptr %k.slot
  br label %vector.cond
vector.done:
  ; the row's tail: one element at a time, the same instructions at width 1
  br label %tail.cond
tail.cond:
  %tail = load i64, ptr %k.slot
  %t.k.next = add i64 %tail, 1
  %t.more = icmp ule i64 %t.k.next, %jend                                    ; an element left
  br i1 %t.more, label %tail.body, label %tail.done
tail.body:
  %t.v0.p = getelementptr inbounds float, ptr %in0, i64 %tail
  %t.v0.m = load float, ptr %t.v0.p, align 4                                 ; load in0: float32 (contiguous, test_llvm_golden.cpp:86)
  %t.v2 = fmul float %t.v0.m, %s0                                            ; mul (test_llvm_golden.cpp:86)
  %t.v4 = fadd float %t.v2, %s1                                              ; add (test_llvm_golden.cpp:86)
  %t.v5.keep = fcmp ugt float %t.v4, zeroinitializer
  %t.v5 = select i1 %t.v5.keep, float %t.v4, float zeroinitializer           ; relu (test_llvm_golden.cpp:86)
  %out0.p.1 = getelementptr inbounds float, ptr %out0, i64 %tail
  store float %t.v5, ptr %out0.p.1, align 4                                  ; store out0 (float32)
  store i64 %t.k.next, ptr %k.slot
  br label %tail.cond
tail.done:
  br label %row.end
row.end:
  %e.next = add i64 %e, %left
  store i64 %e.next, ptr %e.slot
  br label %exit
exit:
  ret void
}

attributes #0 = { nounwind "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
attributes #1 = { nounwind alwaysinline "denormal-fp-math"="ieee,ieee" "no-trapping-math"="true" }
