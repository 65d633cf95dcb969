package analysis

// Ported from utils/evaluate/evaluate_test.go @ argo-rollouts 9f8d111d8f8e (EvalTime and Equal
// are not ported: the package has neither).

import (
	"math"
	"reflect"
	"regexp"
	"testing"
)

const invalidRefCondition = "a == true"

func TestEvaluateResult(t *testing.T) {
	for _, tc := range []struct {
		name               string
		success, failure   string
		result             any
		want               Phase
		wantErr, errSubstr string
	}{
		// TestEvaluateResultWithSuccess … TestEvaluateResultWithErrorOnFailureCondition
		{name: "success", success: "true", failure: "false", result: true, want: PhaseSuccessful},
		{name: "failure", success: "true", failure: "true", result: true, want: PhaseFailed},
		{name: "inconclusive", success: "false", failure: "false", result: true, want: PhaseInconclusive},
		{name: "no success condition, not failing", failure: "false", result: true, want: PhaseSuccessful},
		{name: "no failure condition, not successful", success: "false", result: true, want: PhaseFailed},
		{name: "no conditions", result: true, want: PhaseSuccessful},
		{name: "error on success condition", success: invalidRefCondition, failure: "true", result: true, want: PhaseError,
			wantErr: `could not evaluate successCondition "a == true": unknown name a`},
		{name: "error on failure condition", success: "true", failure: invalidRefCondition, result: true, want: PhaseError,
			wantErr: `could not evaluate failureCondition "a == true": unknown name a`},
		// TestEvaluateResultErrorMessageWithNilResult, …WithEmptySlice, …WithInvalidExpression, …OnFailureCondition
		{name: "nil result", success: "result[0] >= 0.95", result: nil, want: PhaseError,
			wantErr: `could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`},
		{name: "empty slice", success: "result[0] >= 0.95", result: []float64{}, want: PhaseError,
			wantErr: `could not evaluate successCondition "result[0] >= 0.95": metric result is nil or empty: no data returned from the metric provider`},
		{name: "invalid expression", success: invalidRefCondition, result: true, want: PhaseError,
			wantErr: `could not evaluate successCondition "a == true": unknown name a`},
		{name: "invalid failure expression", success: "true", failure: "invalidVar == true", result: true, want: PhaseError,
			wantErr: `could not evaluate failureCondition "invalidVar == true": unknown name invalidVar`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evaluateResult(tc.result, Metric{SuccessCondition: tc.success, FailureCondition: tc.failure})
			if got != tc.want {
				t.Errorf("phase = %s, want %s", got, tc.want)
			}
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr {
				t.Errorf("err = %q, want %q", gotErr, tc.wantErr)
			}
		})
	}
}

func TestEvalCondition(t *testing.T) {
	for _, tc := range []struct {
		name      string
		result    any
		condition string
		want      bool
		wantErr   string // a regexp; "" for no error
	}{
		// TestEvaluateConditionWithSuccess, …WithFailure
		{"success", true, "result == true", true, ""},
		{"failure", true, "result == false", false, ""},
		// TestErrorWithNonBoolReturn, TestErrorWithInvalidReference
		{"non-bool", true, "1", false, `^expected bool, but got int$`},
		{"invalid reference", true, "invalidVariable", false, `^unknown name invalidVariable$`},
		// TestEvaluateArray
		{"array", map[string]any{"service_apdex": map[string]any{"label": nil, "values": map[string]any{"values": []any{float64(2), float64(2)}}}},
			"all(result.service_apdex.values.values, {# > 1})", true, ""},
		// TestEvaluateInOperator, TestEvaluateFloat64, TestEvaluateInvalidStruct
		{"in operator", []float64{2, 2}, "2 in result", true, ""},
		{"float64", float64(5), "result > 1", true, ""},
		{"invalid struct", true, "result.Name() == 'hi'", false, `.`},
		// TestEvaluateAsIntPanic, TestEvaluateAsInt
		{"asInt panic", "1.1", "asInt(result) == 1.1", false, `strconv.ParseInt: parsing "1.1": invalid syntax`},
		{"asInt string", "1", "asInt(result) == 1", true, ""},
		{"asInt int", 1, "asInt(result) == 1", true, ""},
		{"asInt float", 1.123, "asInt(result) == 1", true, ""},
		// TestEvaluateAsFloatError, TestEvaluateAsFloat
		{"asFloat not a number", "NotANum", "asFloat(result) == 1.1", false, `strconv.ParseFloat: parsing "NotANum": invalid syntax`},
		{"asFloat vs string", "1.1", "asFloat(result) == \"1.1\"", false, `invalid operation: == \(mismatched types float64 and string\)`},
		{"asFloat ==", "1.1", "asFloat(result) == 1.1", true, ""},
		{"asFloat >=", "1.1", "asFloat(result) >= 1.1", true, ""},
		{"asFloat <=", "1.1", "asFloat(result) <= 1.1", true, ""},
		{"asFloat float", 1.1, "asFloat(result) == 1.1", true, ""},
		{"asFloat int ==", 1, "asFloat(result) == 1", true, ""},
		{"asFloat int >=", 1, "asFloat(result) >= 1", true, ""},
		// The environment's other helpers, on Prometheus-shaped results.
		{"isNaN", math.NaN(), "isNaN(result)", true, ""},
		{"isInf", math.Inf(1), "isInf(result)", true, ""},
		{"isNil of nil", nil, "isNil(result)", true, ""},
		{"isNil of an empty vector", []float64{}, "isNil(result)", false, ""},
		{"default of nil", nil, "default(result, 0.5) == 0.5", true, ""},
		{"default of a scalar", 0.9, "default(result, 0.5) == 0.9", true, ""},
		{"len of an empty vector", []float64{}, "len(result) == 0 || result[0] >= 0.95", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := evalCondition(tc.result, tc.condition)
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("no error, want %q", tc.wantErr)
			case tc.wantErr != "" && !regexp.MustCompile(tc.wantErr).MatchString(err.Error()):
				t.Errorf("err = %q, want match %q", err, tc.wantErr)
			}
		})
	}
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}

// TestAsInt, TestAsFloat
func TestAsIntAsFloat(t *testing.T) {
	for _, tc := range []struct {
		input       string
		output      int64
		shouldPanic bool
	}{
		{"1", 1, false},
		{"notint", 1, true},
		{"1.1", 1, true},
	} {
		if tc.shouldPanic {
			if !panics(func() { asInt(tc.input) }) {
				t.Errorf("asInt(%q) did not panic", tc.input)
			}
		} else if got := asInt(tc.input); got != tc.output {
			t.Errorf("asInt(%q) = %d, want %d", tc.input, got, tc.output)
		}
	}
	for _, tc := range []struct {
		input       string
		output      float64
		shouldPanic bool
	}{
		{"1", 1, false},
		{"notfloat", 1, true},
		{"1.1", 1.1, false},
	} {
		if tc.shouldPanic {
			if !panics(func() { asFloat(tc.input) }) {
				t.Errorf("asFloat(%q) did not panic", tc.input)
			}
		} else if got := asFloat(tc.input); got != tc.output {
			t.Errorf("asFloat(%q) = %v, want %v", tc.input, got, tc.output)
		}
	}
}

// TestIsInf, TestDefaultFunc, TestIsNilFunc, TestIsNil, TestValueFromPointer, TestIsNilOrEmpty
func TestHelpers(t *testing.T) {
	var nilFloat *float64
	oneFloat := float64(1)
	oneFloatPointer := new(float64)
	*oneFloatPointer = 1
	var nilArr []string
	twoArr := []string{"hi", "hello"}

	check := func(name string, got, want bool) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("isInf(Inf)", isInf(math.Inf(0)), true)
	check("isInf(0)", isInf(0.0), false)

	check("default(nil, 0)", defaultFunc(nilFloat)(nilFloat, 0) == 0, true)
	check("default(nil, 1)", defaultFunc(nilFloat)(nilFloat, 1) == 1, true)
	check("default(nil, 2)", defaultFunc(nilFloat)(nilFloat, 2) == 2, true)
	check("default(&1, 0)", defaultFunc(oneFloatPointer)(oneFloatPointer, 0) == oneFloat, true)

	for _, f := range []func(any) bool{func(v any) bool { return isNilFunc(v)(v) }, isNil} {
		check("isNil(nil *float64)", f(nilFloat), true)
		check("isNil(nil []string)", f(nilArr), true)
		check("isNil(1.0)", f(oneFloat), false)
		check("isNil([hi hello])", f(twoArr), false)
		check("isNil(1)", f(1), false)
		check("isNil(false)", f(false), false)
	}

	check("valueFromPointer(nil *float64)", valueFromPointer(nilFloat) == nil, true)
	check("valueFromPointer(nil []string)", valueFromPointer(nilArr) == nil, true)
	check("valueFromPointer([hi hello])", reflect.DeepEqual(valueFromPointer(twoArr).([]string), twoArr), true)
	check("valueFromPointer(&1)", valueFromPointer(oneFloatPointer) == oneFloat, true)
	check("valueFromPointer(1)", valueFromPointer(1) == 1, true)
	check("valueFromPointer(false)", valueFromPointer(false) == false, true)

	check("isNilOrEmpty(nil)", isNilOrEmpty(nil), true)
	check("isNilOrEmpty([]float64{})", isNilOrEmpty([]float64{}), true)
	check("isNilOrEmpty([]string{})", isNilOrEmpty([]string{}), true)
	check("isNilOrEmpty([1])", isNilOrEmpty([]float64{1.0}), false)
	check("isNilOrEmpty(42)", isNilOrEmpty(42), false)
	check("isNilOrEmpty(hello)", isNilOrEmpty("hello"), false)

	// Not in Argo's table: an array does not panic here.
	check("isNil([2]int)", isNil([2]int{}), false)
}
